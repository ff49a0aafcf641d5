// What the API's plugins add to Fastify's instance and requests (the
// `app.decorate` / `app.decorateRequest` calls in api/plugins/), so routes
// and plugins typed `import('fastify').FastifyInstance` see them.
import type { Pool } from 'pg'
import type { FastifyRequest } from 'fastify'
import type { Config } from '../lib/runtime/config.js'
import type { SecretBox } from '../lib/runtime/secret-box.js'
import type { createMetrics } from './prometheus.js'

/** The origin server of the lab this process runs (`h3lens start`). */
export interface LabOrigin {
  server: string
  version: string | null
  distorts_h3: boolean
  /** false once the origin exited while serving (lab/origin.js) */
  running: boolean
  exited_at: string | null
}

/** An agent's bearer token, as authenticateAgent resolves it. */
export interface AuthenticatedAgent {
  id: number
  location_id: string
  name: string
}

/** An API key, as authenticateApiKey resolves it. */
export interface AuthenticatedApiKey {
  id: number
  name: string
  role: 'read' | 'write'
}

declare module 'fastify' {
  interface FastifyInstance {
    /** api/plugins/context.js */
    db: Pool
    /** api/app.js: compiles every route's validators and serializers now instead of at each route's first call */
    compileAllSchemas: () => void
    /** api/plugins/context.js */
    config: Config
    /** api/plugins/context.js: null unless this process runs the lab */
    labOrigin: LabOrigin | null
    /** api/plugins/context.js: seals and opens journeys' secrets (lib/runtime/secret-box.js) */
    secrets: SecretBox
    /** api/plugins/auth.js: every route and the credentials it needs */
    authRoutes: { method: string, url: string, auth: string }[]
    /** api/plugins/auth.js: counts a wrong credential; seconds to wait, 0 = answer 401 */
    authFailures: { reject: (request: FastifyRequest, why: string) => Promise<number> }
    /** api/plugins/auth.js: seconds this agent must wait, 0 = go ahead */
    agentRequests: (request: FastifyRequest) => Promise<number>
    /** api/plugins/metrics.js */
    metrics: ReturnType<typeof createMetrics>
    /** api/plugins/errors.js: when a write last failed for want of disk space or memory, why, and on which route (null once that route stores again); failed() records one */
    databaseWrites: { failedAt: number | null, message: string | null, route: string | null, failed: (request: FastifyRequest, err: any) => void }
  }

  interface FastifyRequest {
    /** api/routes/comparison.js: the deprecated metric alias (ttfb) a request named, answered with a Deprecation header */
    deprecatedMetric?: string
    /** api/routes/rum-ingest.js: what became of a beacon (h3lens_rum_beacons_total's outcome) */
    rumOutcome?: string
    /** api/plugins/auth.js: the key that authenticated this request, if any */
    apiKey: AuthenticatedApiKey | null
    /**
     * api/plugins/agent-auth.js: the agent whose token authenticated the
     * request. Its hook sets it before every /api/v1/agent/* handler runs,
     * and only those handlers read it (elsewhere it stays null).
     */
    agent: AuthenticatedAgent
  }

  interface FastifyContextConfig {
    /** api/plugins/auth.js: one of AUTH; filled in for every route */
    auth?: string
    /** api/plugins/errors.js: what the route stores (results), one kind of write for /healthz whichever route */
    stores?: string
  }
}

/** A request to a route with an `:id` path parameter (api/schemas.js idParams: a positive integer). */
export type IdRequest = FastifyRequest<{ Params: { id: number } }>

/** A request to a route with an `:id` path parameter and a JSON body its schema has checked; the store function it goes to reads the fields. */
export type IdBodyRequest = FastifyRequest<{ Params: { id: number }, Body: Record<string, any> }>

/** The query string of api/schemas.js resultFilterQuery. */
export interface ResultFilterQuery {
  location?: string
  browser?: string
  mode?: string
  probe?: string
  view?: string
  status?: string
  from?: string
  to?: string
}
