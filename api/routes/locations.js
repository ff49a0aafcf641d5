import { listLocations } from '../../lib/locations.js'

/**
 * Route plugins take the app as `any`: Fastify's types cannot derive request
 * shapes from JSON schemas in plain JS. The schemas check them at run time.
 * @param {any} app
 */
export default async function locationRoutes (app) {
  app.get('/locations', {
    schema: {
      description: 'Where measurements come from, with the network profile of each lab location.',
      tags: ['locations'],
      response: { 200: { type: 'object', properties: { items: { type: 'array', items: { $ref: 'location#' } } } } }
    }
  }, async () => ({ items: await listLocations(app.db) }))
}
