import fp from 'fastify-plugin'

/**
 * One error handler: schema failures and domain errors become 4xx with a
 * readable message; anything else is logged with request context and
 * answered with a generic 500 that leaks nothing.
 */
export default fp(async (/** @type {any} */ app) => {
  app.setErrorHandler((/** @type {any} */ err, request, reply) => {
    if (err.validation) {
      return reply.code(400).send({ statusCode: 400, error: 'Bad Request', message: describeValidation(err), field: fieldOf(err.validation[0]) })
    }
    const status = err.statusCode ?? 500
    if (status >= 500) {
      request.log.error({ err, url: request.url, method: request.method }, 'request failed')
      return reply.code(500).send({ statusCode: 500, error: 'Internal Server Error', message: 'something went wrong on the server; it has been logged' })
    }
    const body = { statusCode: status, error: httpReason(status), message: err.message }
    if (err.field) body.field = err.field
    if (err.code && !String(err.code).startsWith('FST_')) body.code = err.code
    return reply.code(status).send(body)
  })
  app.setNotFoundHandler((request, reply) => {
    reply.code(404).send({ statusCode: 404, error: 'Not Found', message: `no route for ${request.method} ${request.url.split('?')[0]}` })
  })
}, { name: 'errors' })

/** @param {any} err */
function describeValidation (err) {
  const v = err.validation[0]
  const where = err.validationContext === 'body' ? '' : `${err.validationContext} `
  const field = fieldOf(v)
  switch (v.keyword) {
    case 'additionalProperties':
      return `unknown field "${v.params.additionalProperty}"${field ? ` in ${field}` : ''}`
    case 'required':
      return `${where}${v.params.missingProperty} is required`
    case 'enum':
      return `${where}${field || 'value'} must be one of ${v.params.allowedValues.join(', ')}`
    case 'type':
      return `${where}${field || 'value'} must be ${v.params.type.replace(',', ' or ')}`
    default:
      return `${where}${field || 'value'} ${v.message}`
  }
}

/** @param {any} v */
function fieldOf (v) {
  if (!v) return undefined
  const path = (v.instancePath || '').replace(/^\//, '').replace(/\//g, '.')
  if (v.keyword === 'required') return path ? `${path}.${v.params.missingProperty}` : v.params.missingProperty
  return path || undefined
}

function httpReason (status) {
  return { 400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 409: 'Conflict', 413: 'Payload Too Large', 415: 'Unsupported Media Type', 422: 'Unprocessable Entity', 429: 'Too Many Requests' }[status] ?? 'Error'
}
