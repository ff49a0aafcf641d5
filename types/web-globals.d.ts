// What the dashboard's classic scripts add to window.
interface Window {
  /** web/vendor/uPlot.iife.min.js, loaded on first use by web/components/charts.js */
  uPlot?: typeof import('uplot').default
}
