import { listLocations } from '../../lib/locations.js'

/** @param {import('fastify').FastifyInstance} app */
export default async function locationRoutes (app) {
  app.get('/locations', {
    schema: {
      description: 'Where measurements come from, with the network profile of each lab location.',
      tags: ['locations'],
      response: { 200: { type: 'object', properties: { items: { type: 'array', items: { $ref: 'location#' } } } } }
    }
  }, async () => ({ items: await listLocations(app.db) }))
}
