import { listLocations, locationCapacity } from '../../lib/store/locations.js'

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
                distorts_h3: { type: 'boolean' }
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
}
