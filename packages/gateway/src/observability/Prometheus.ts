/**
 * Renders Effect's metric registry in the Prometheus text format (0.0.4). The text itself —
 * HELP and TYPE lines, label escaping, number formatting — is written by `prom-client`'s
 * `Registry`, fed with one adapter per metric name; nothing here formats exposition by hand.
 * The process metrics of `prom-client` (CPU, memory, event loop lag, GC) are appended.
 */
import * as Metric from "effect/Metric"
import type * as MetricPair from "effect/MetricPair"
import * as MetricState from "effect/MetricState"
import * as Option from "effect/Option"
import * as Prom from "prom-client"

/** The content type of the answer. */
export const contentType = Prom.Registry.PROMETHEUS_CONTENT_TYPE

type Labels = Record<string, string>
interface Sample {
  readonly metricName?: string
  readonly labels: Labels
  readonly value: number
}
interface Family {
  readonly name: string
  readonly help: string
  readonly type: "counter" | "gauge" | "histogram" | "summary"
  readonly values: Array<Sample>
}

const toNumber = (n: number | bigint) => (typeof n === "bigint" ? Number(n) : n)

const labelsOf = (pair: MetricPair.MetricPair.Untyped): Labels => {
  const labels: Labels = {}
  for (const tag of pair.metricKey.tags) labels[tag.key] = tag.value
  return labels
}

const le = (bound: number) => (bound === Number.POSITIVE_INFINITY ? "+Inf" : String(bound))

/** Groups a registry snapshot into metric families, in a stable order. */
export const families = (snapshot: ReadonlyArray<MetricPair.MetricPair.Untyped>): ReadonlyArray<Family> => {
  const byName = new Map<string, Family>()
  const family = (pair: MetricPair.MetricPair.Untyped, type: Family["type"]) => {
    const name = pair.metricKey.name
    let f = byName.get(name)
    if (f === undefined) {
      f = { name, help: Option.getOrElse(pair.metricKey.description, () => name), type, values: [] }
      byName.set(name, f)
    }
    return f
  }
  for (const pair of snapshot) {
    const state = pair.metricState
    const labels = labelsOf(pair)
    if (MetricState.isCounterState(state)) {
      // A counter not named `…_total` (Effect's own fiber counts go up and down) is a gauge to Prometheus.
      family(pair, pair.metricKey.name.endsWith("_total") ? "counter" : "gauge").values.push({ labels, value: toNumber(state.count) })
    } else if (MetricState.isGaugeState(state)) {
      family(pair, "gauge").values.push({ labels, value: toNumber(state.value) })
    } else if (MetricState.isHistogramState(state)) {
      const f = family(pair, "histogram")
      let sawInf = false
      for (const [bound, cumulative] of state.buckets) {
        if (bound === Number.POSITIVE_INFINITY) sawInf = true
        f.values.push({ metricName: `${f.name}_bucket`, labels: { ...labels, le: le(bound) }, value: cumulative })
      }
      if (!sawInf) f.values.push({ metricName: `${f.name}_bucket`, labels: { ...labels, le: "+Inf" }, value: state.count })
      f.values.push({ metricName: `${f.name}_sum`, labels, value: state.sum })
      f.values.push({ metricName: `${f.name}_count`, labels, value: state.count })
    } else if (MetricState.isSummaryState(state)) {
      const f = family(pair, "summary")
      for (const [q, v] of state.quantiles) {
        f.values.push({ labels: { ...labels, quantile: String(q) }, value: Option.getOrElse(v, () => Number.NaN) })
      }
      f.values.push({ metricName: `${f.name}_sum`, labels, value: state.sum })
      f.values.push({ metricName: `${f.name}_count`, labels, value: state.count })
    } else if (MetricState.isFrequencyState(state)) {
      const f = family(pair, "counter")
      for (const [key, n] of state.occurrences) f.values.push({ labels: { ...labels, key }, value: n })
    }
  }
  return [...byName.values()].sort((a, b) => a.name.localeCompare(b.name))
}

let processRegistry: Prom.Registry | undefined
const processMetrics = () => {
  if (processRegistry === undefined) {
    processRegistry = new Prom.Registry()
    Prom.collectDefaultMetrics({ register: processRegistry })
    // Gauges named like counters, which `promtool check metrics` rejects; their `_total`-less
    // equivalents are not provided by prom-client, and the handle counts matter little.
    for (const name of ["nodejs_active_handles_total", "nodejs_active_requests_total", "nodejs_active_resources_total"]) {
      processRegistry.removeSingleMetric(name)
    }
  }
  return processRegistry
}

/** The text of `/metrics`: every metric of Effect's registry, then the process metrics. */
export const render = async (): Promise<string> => {
  const registry = new Prom.Registry()
  for (const f of families(Metric.unsafeSnapshot())) {
    // prom-client renders any object with a name and `get()`; the snapshot is already taken.
    registry.registerMetric({ name: f.name, get: async () => f } as unknown as Prom.Metric)
  }
  const [own, proc] = await Promise.all([registry.metrics(), processMetrics().metrics()])
  // prom-client writes NaN as `Nan`, which Prometheus does not read.
  return (own.trim() === "" ? proc : `${own}\n${proc}`).replace(/ Nan$/gm, " NaN")
}
