// Public API of the statistics library: quantile sketches for rollups and the
// HTTP/3-versus-HTTP/2 comparison statistics. Pure functions, no I/O.

export {
  SKETCH_RELATIVE_ACCURACY,
  newSketch,
  addToSketch,
  sketchQuantile,
  sketchCount,
  sketchSummary,
  mergeSketches,
  encodeSketch,
  decodeSketch,
  readEncoded,
  encodedQuantiles
} from './sketch.js'
export { exactQuantile } from './quantile.js'
export { mannWhitneyU, cliffsDelta } from './rank.js'
export { SeededRandom, createRandom, randomNormal } from './random.js'
export { roundBootstrap, armsBootstrap, bootstrapSummary, resampledRatioInterval } from './round-bootstrap.js'
export { wilcoxonSignedRank, hodgesLehmann, normalQuantile } from './paired.js'
export { wilsonInterval, mcnemarExactP, ratioInterval, ratioStandardError, fisherLowerP } from './proportions.js'
export { benjaminiHochberg, screenedBenjaminiHochberg, selectiveBenjaminiHochberg } from './fdr.js'
export { normalSurvival } from './normal.js'
