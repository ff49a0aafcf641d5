-- Real users beside the lab (docs/RUM.md): sites that send beacons from
-- their visitors' browsers, the beacons, and the countries each location
-- stands for, so real users and synthetic locations meet in one region.

-- ISO 3166-1 alpha-2 codes, upper case; null: the location stands for no
-- country (real users from there are shown under their own country).
ALTER TABLE locations ADD COLUMN countries text[];

-- A site's key is public (it is in every page's install tag): it names the
-- site, and the Origin header a beacon arrives with must be one of the
-- site's origins.
CREATE TABLE rum_sites (
  id           bigserial PRIMARY KEY,
  key          text NOT NULL UNIQUE,
  name         text NOT NULL,
  origins      text[] NOT NULL CHECK (cardinality(origins) BETWEEN 1 AND 20),
  sample_rate  double precision NOT NULL DEFAULT 1 CHECK (sample_rate > 0 AND sample_rate <= 1),
  created_at   timestamptz NOT NULL DEFAULT now(),
  updated_at   timestamptz NOT NULL DEFAULT now(),
  revoked_at   timestamptz
);

-- One row per page view (lib/measurement/rum/beacon.js defines every
-- column). No address and no user agent string: country and browser family
-- with its major version are all that is kept of the request.
-- `time` is when the page view began (the browser's clock); with the site
-- and the view's random id it makes a beacon unique, so a replayed beacon
-- is stored once.
CREATE TABLE rum_beacons (
  time                  timestamptz NOT NULL,
  received_at           timestamptz NOT NULL DEFAULT now(),
  site_id               bigint NOT NULL REFERENCES rum_sites (id),
  view_id               text NOT NULL,
  origin                text NOT NULL,
  country               text,
  browser               text NOT NULL,
  browser_major         integer,
  nav                   text NOT NULL,
  protocol              text NOT NULL,
  connection            text,
  visit                 text,
  sample_rate           double precision,
  dns_ms                double precision,
  connect_ms            double precision,
  tls_ms                double precision,
  waiting_ms            double precision,
  ttfb_ms               double precision,
  fcp_ms                double precision,
  lcp_ms                double precision,
  inp_ms                double precision,
  activation_ms         double precision,
  lcp_resource_ms       double precision,
  lcp_render_delay_ms   double precision,
  inp_input_delay_ms    double precision,
  inp_processing_ms     double precision,
  inp_presentation_ms   double precision,
  cls                   double precision,
  transfer_bytes        bigint,
  doc_cached            boolean,
  delivery              text,
  resources             integer,
  cached_resources      integer,
  lcp_element           text,
  inp_target            text,
  cls_target            text,
  UNIQUE (site_id, view_id, time)
);
CREATE INDEX rum_beacons_site_time ON rum_beacons (site_id, time);

-- As results (003): a hypertable where TimescaleDB is installed; its
-- retention policy is a setting (H3LENS_RUM_RETENTION_DAYS, applied at
-- start-up by lib/store/timescale.js). On plain PostgreSQL the scheduler
-- deletes old beacons.
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'timescaledb') THEN
    PERFORM create_hypertable('rum_beacons', 'time', chunk_time_interval => interval '1 day', if_not_exists => true);
  END IF;
END
$$;
