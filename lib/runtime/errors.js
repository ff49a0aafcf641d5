// Errors that carry what the caller needs to answer a person: which field, and
// which HTTP status the API should use.

export class ValidationError extends Error {
  /** @param {string} message @param {string} [field] */
  constructor (message, field) {
    super(message)
    this.name = 'ValidationError'
    this.field = field
    this.statusCode = 400
  }
}

export class NotFoundError extends Error {
  /** @param {string} message */
  constructor (message) {
    super(message)
    this.name = 'NotFoundError'
    this.statusCode = 404
  }
}

export class ConflictError extends Error {
  /** @param {string} message @param {string} [code] */
  constructor (message, code) {
    super(message)
    this.name = 'ConflictError'
    this.statusCode = 409
    this.code = code
  }
}

/** Well-formed input whose values cannot be true (timings out of order, out of range). */
export class UnprocessableError extends Error {
  /** @param {string} message @param {string} [field] @param {string} [code] a machine-readable reason, where a client acts on it */
  constructor (message, field, code) {
    super(message)
    this.name = 'UnprocessableError'
    this.field = field
    this.statusCode = 422
    if (code) this.code = code
  }
}
