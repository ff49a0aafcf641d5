import { listLocations, setLocationCountries } from '../../lib/store/locations.js'
import { locationCapacity } from '../../lib/store/location-capacity.js'
import { errorResponses } from '../schemas.js'

/**
 * Route plugins take the app as `any`: Fastify's types cannot derive request
 * shapes from JSON schemas in plain JS. The schemas check them at run time.
 * @param {import('fastify').FastifyInstance} app
 */
export default async function locationRoutes (app) {
  app.get('/locations', {
    schema: {
      description: 'Where measurements come from, with the network profile of each lab location, and the server the lab origin runs.',
      tags: ['locations'],
      response: {
        200: {
          type: 'object',
          properties: {
            items: { type: 'array', items: { $ref: 'location#' } },
            lab_origin: {
              type: 'object',
              nullable: true,
              description: 'The lab origin run by this process (`h3lens start`); null when it runs none. ' +
                "distorts_h3 is true on Debian's Caddy 2.6.2, which drops part of Chromium's two-packet ClientHello (quic-go 3760) and so slows some H3 connects.",
              properties: {
                server: { type: 'string', example: 'caddy' },
                version: { type: 'string', nullable: true, example: '2.11.7' },
                distorts_h3: { type: 'boolean' },
                running: { type: 'boolean', description: 'false once the origin exited while serving (killed, crashed): lab rounds fail until h3lens is restarted' },
                exited_at: { type: 'string', format: 'date-time', nullable: true, description: 'When it exited; null while it runs' }
              }
            }
          }
        }
      }
    }
  }, async () => {
    const [items, capacity] = await Promise.all([listLocations(app.db), locationCapacity(app.db)])
    for (const l of items) l.capacity = capacity.get(l.id)
    return { items, lab_origin: app.labOrigin }
  })

  app.patch('/locations/:location', {
    schema: {
      description: 'Set the countries a location stands for (ISO 3166-1 alpha-2 codes; [] clears them): real users from those countries are shown ' +
        'under this location, beside its synthetic measurements (docs/RUM.md). A country stands under one location only.',
      tags: ['locations'],
      params: { type: 'object', required: ['location'], properties: { location: { type: 'string', maxLength: 63 } } },
      body: {
        type: 'object',
        additionalProperties: false,
        required: ['countries'],
        properties: { countries: { type: 'array', maxItems: 300, items: { type: 'string', minLength: 2, maxLength: 2 } } }
      },
      response: { 200: { $ref: 'location#' }, ...errorResponses }
    }
  }, async (/** @type {import('fastify').FastifyRequest<{ Params: { location: string }, Body: { countries: string[] } }>} */ request) =>
    setLocationCountries(app.db, request.params.location, request.body.countries))
}
