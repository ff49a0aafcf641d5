// The one client every view uses to talk to the h3lens API.

export class ApiError extends Error {
  constructor (message, status, field) {
    super(message)
    this.status = status
    this.field = field
  }
}

async function request (method, path, body) {
  const res = await fetch(`/api/v1${path}`, {
    method,
    headers: body ? { 'content-type': 'application/json' } : {},
    body: body ? JSON.stringify(body) : undefined
  })
  if (res.status === 204) return null
  const data = await res.json().catch(() => ({}))
  if (!res.ok) throw new ApiError(data.message ?? `${res.status} ${res.statusText}`, res.status, data.field)
  return data
}

export const api = {
  monitors: () => request('GET', '/monitors').then((d) => d.items),
  monitor: (id) => request('GET', `/monitors/${id}`),
  createMonitor: (body) => request('POST', '/monitors', body),
  updateMonitor: (id, body) => request('PATCH', `/monitors/${id}`, body),
  deleteMonitor: (id) => request('DELETE', `/monitors/${id}`),
  results: (id, params = {}) => request('GET', `/monitors/${id}/results?${new URLSearchParams(params)}`),
  result: (id) => request('GET', `/results/${id}`),
  locations: () => request('GET', '/locations').then((d) => d.items),
  agents: () => request('GET', '/agents').then((d) => d.items)
}
