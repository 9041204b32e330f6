/**
 * The gateway's metrics (DESIGN.md §11), as Effect `Metric`s in Effect's global registry, which
 * `/metrics` renders: any module may add its own `Metric` and it appears there too. Labels are
 * route templates, vendors, model ids and outcomes only: never tokens, tenants, keys, task ids or
 * raw paths.
 *
 * Hot paths update through `cached`, which keeps one metric per label set built from its full key:
 * its first update finds the registry's entry and keeps it, so a request costs a map lookup. (A
 * metric from `Metric.tagged*` instead merges its labels and looks its key up in the registry on
 * every update: hashing a whole key, about 0.1 µs and a few allocations each time.)
 */
import * as Metric from "effect/Metric"
import * as MetricBoundaries from "effect/MetricBoundaries"
import * as MetricKey from "effect/MetricKey"
import type * as MetricKeyType from "effect/MetricKeyType"
import * as MetricLabel from "effect/MetricLabel"

const seconds = (...bounds: ReadonlyArray<number>) => MetricBoundaries.fromIterable(bounds)

/** `genway_http_requests_total{route,method,status}`. */
export const httpRequestsKey = MetricKey.counter("genway_http_requests_total", {
  description: "HTTP requests answered, by route template, method and exact status code",
  incremental: true
})
export const httpRequests = Metric.fromMetricKey(httpRequestsKey)

/** `genway_http_request_duration_seconds{route,method}` (streams: until the response starts). */
export const httpDurationKey = MetricKey.histogram(
  "genway_http_request_duration_seconds",
  seconds(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
  "Time to answer an HTTP request (for streams, until the response starts), by route template and method"
)
export const httpDuration = Metric.fromMetricKey(httpDurationKey)

/** `genway_overhead_seconds{route}`: E1/E2 time spent in the gateway, upstream waits excluded. */
export const overheadKey = MetricKey.histogram(
  "genway_overhead_seconds",
  seconds(0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1),
  "Time spent in the gateway on synchronous endpoints (total, or time to first byte for streams, minus the time waiting on the vendor)"
)
export const overhead = Metric.fromMetricKey(overheadKey)

/** `genway_upstream_requests_total{vendor,operation,outcome}`. */
export const upstreamRequestsKey = MetricKey.counter("genway_upstream_requests_total", {
  description: "HTTP requests sent to vendors, by vendor, operation and outcome (ok, 4xx, 429, 5xx, error)",
  incremental: true
})
export const upstreamRequests = Metric.fromMetricKey(upstreamRequestsKey)

/** `genway_upstream_duration_seconds{vendor,operation}` (until the vendor's response starts). */
export const upstreamDurationKey = MetricKey.histogram(
  "genway_upstream_duration_seconds",
  seconds(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120),
  "Time waiting on vendors until their response starts, by vendor and operation"
)
export const upstreamDuration = Metric.fromMetricKey(upstreamDurationKey)

/** `genway_tasks{model,status}`: stored tasks, from counts kept in step with every write. */
export const tasksKey = MetricKey.gauge("genway_tasks", { description: "Stored tasks by model and status" })
export const tasks = Metric.fromMetricKey(tasksKey)

/** `genway_tasks_due`: tasks waiting for a worker (the queue depth). */
export const tasksDue = Metric.gauge("genway_tasks_due", {
  description: "Unfinished tasks whose next step is due now (queue depth)"
})

/** `genway_task_duration_seconds{model,outcome}`: creation to terminal state. */
export const taskDurationKey = MetricKey.histogram(
  "genway_task_duration_seconds",
  seconds(1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200),
  "Time from a task's creation to its terminal state, by model and outcome"
)
export const taskDuration = Metric.fromMetricKey(taskDurationKey)

/** `genway_poll_lag_seconds`: how late a due task was claimed by a worker. */
export const pollLag = Metric.histogram(
  "genway_poll_lag_seconds",
  seconds(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300),
  "Delay between a task step being due and a worker claiming it"
)

/**
 * One metric per label set of `key`, built once: `get(["/v1/x", "POST", "200"])`. Label values are
 * the caller's business; keep them bounded.
 */
export const cached = <Type extends MetricKeyType.MetricKeyType<any, any>>(key: MetricKey.MetricKey<Type>, names: ReadonlyArray<string>) => {
  const byLabels = new Map<string, Metric.Metric<Type, MetricKeyType.MetricKeyType.InType<Type>, MetricKeyType.MetricKeyType.OutType<Type>>>()
  return (values: ReadonlyArray<string>) => {
    const id = values.join("\u0000")
    let metric = byLabels.get(id)
    if (metric === undefined) {
      metric = Metric.fromMetricKey(MetricKey.taggedWithLabels(key, names.map((k, i) => MetricLabel.make(k, values[i] ?? ""))))
      byLabels.set(id, metric)
    }
    return metric
  }
}
