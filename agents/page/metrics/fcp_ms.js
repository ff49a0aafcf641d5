// Runs in the page. First contentful paint in ms, or null if nothing painted.
export default function fcp () {
  const [entry] = performance.getEntriesByName('first-contentful-paint', 'paint')
  return entry ? entry.startTime : null
}
