/**
 * One scrape for the whole process group under `WORKERS=N`. Workers share the port, so a
 * scrape reaches one of them; that worker asks the primary over the cluster's IPC channel,
 * the primary asks every worker for its registry (as `getMetricsAsJSON()`), and answers the
 * text of prom-client's `AggregatorRegistry.aggregate` of the answers: counters and
 * histograms summed, every gauge kept per worker under a `worker` label (a sum of heap
 * sizes, readiness or cache bounds would mislead). A worker that does not answer within
 * `WORKER_ANSWER_MS` is left out, and `cc_metrics_worker_answered{worker}` says which: 1 for
 * each worker in the sum, 0 for each left out. No step waits without a deadline.
 *
 * prom-client's own `clusterMetrics()` fails the whole scrape when one worker is late, and
 * its worker half answers for the global registry; the service keeps one registry per app.
 *
 * @see https://github.com/siimon/prom-client#usage-with-nodejss-cluster-module
 */
import cluster, { type Worker } from 'node:cluster';
import { AggregatorRegistry, Gauge, type Registry } from 'prom-client';
import { ProblemError } from './errors.js';

/** How long the primary waits for each worker's series; a late worker is left out of that scrape. */
const WORKER_ANSWER_MS = 3_000;
/** How long a worker waits for the primary's aggregate: its wait for the workers, and a margin. */
const PRIMARY_ANSWER_MS = WORKER_ANSWER_MS + 2_000;

/** A worker asks the primary for the aggregate, and the primary answers it with `text`. */
const AGGREGATE = 'context-compiler:metrics';
/** The primary asks a worker for its own series, and the worker answers with `metrics`. */
const SERIES = 'context-compiler:metrics-series';

interface AggregateMessage {
  type: typeof AGGREGATE;
  id: number;
  text?: string;
}
interface SeriesMessage {
  type: typeof SERIES;
  id: number;
  metrics?: MetricJson[];
}
type MetricJson = Awaited<ReturnType<Registry['getMetricsAsJSON']>>[number];

function isMessage<T extends { type: string; id: number }>(message: unknown, type: T['type']): message is T {
  return typeof message === 'object' && message !== null && (message as T).type === type && Number.isSafeInteger((message as T).id);
}

/**
 * Primary: answers each worker's request for the aggregate. Every worker connected when
 * the request arrives is asked; the answer is sent once all have answered or the deadline
 * passed, whichever comes first.
 */
export function serveClusterMetrics(): void {
  let nextId = 0;
  const pending = new Map<number, (worker: Worker, metrics: MetricJson[]) => void>();
  cluster.on('message', (from, message: unknown) => {
    if (isMessage<SeriesMessage>(message, SERIES)) {
      pending.get(message.id)?.(from, message.metrics ?? []);
      return;
    }
    if (!isMessage<AggregateMessage>(message, AGGREGATE)) return;
    const asked = message.id;
    const workers = Object.values(cluster.workers ?? {}).filter((worker): worker is Worker => worker !== undefined && worker.isConnected());
    const id = nextId++;
    const answered = new Map<Worker, MetricJson[]>();
    const finish = () => {
      clearTimeout(deadline);
      pending.delete(id);
      // A text the workers' series cannot be aggregated into (never expected) is answered as none: that scrape fails, the primary stays up.
      void Promise.resolve()
        .then(() => aggregate(workers, answered))
        .then(
          (text) => ({ type: AGGREGATE, id: asked, text }) satisfies AggregateMessage,
          () => ({ type: AGGREGATE, id: asked }) satisfies AggregateMessage,
        )
        .then((answer) => {
          if (from.isConnected()) from.send(answer);
        });
    };
    const deadline = setTimeout(finish, WORKER_ANSWER_MS);
    pending.set(id, (worker, metrics) => {
      if (!workers.includes(worker)) return;
      answered.set(worker, metrics);
      if (answered.size === workers.length) finish();
    });
    for (const worker of workers) worker.send({ type: SERIES, id } satisfies SeriesMessage);
  });
}

/** The text exposition of the workers' series that answered, and which did. */
function aggregate(workers: readonly Worker[], answered: ReadonlyMap<Worker, MetricJson[]>): Promise<string> {
  const registry = AggregatorRegistry.aggregate([...answered.values()]);
  const state = new Gauge({
    name: 'cc_metrics_worker_answered',
    help: 'Workers asked for this scrape: 1 for each whose series are in it, 0 for each that did not answer in time and is left out.',
    labelNames: ['worker'] as const,
    registers: [registry],
  });
  for (const worker of workers) state.set({ worker: String(worker.id) }, answered.has(worker) ? 1 : 0);
  return registry.metrics();
}

/**
 * Worker: answers the primary's requests for this worker's series, and returns how to
 * render the aggregate a scrape of this worker answers with. Rejects when the primary does
 * not answer in time (it is gone or stuck), so the scrape fails instead of hanging.
 */
export function clusterMetricsOf(registry: Registry): () => Promise<string> {
  const worker = String(cluster.worker?.id ?? process.pid);
  let nextId = 0;
  const waiting = new Map<number, (text: string | undefined) => void>();
  process.on('message', (message: unknown) => {
    if (isMessage<SeriesMessage>(message, SERIES)) {
      void registry.getMetricsAsJSON().then(
        (metrics) => process.send?.({ type: SERIES, id: message.id, metrics: metrics.map((metric) => perWorker(metric, worker)) } satisfies SeriesMessage),
        () => process.send?.({ type: SERIES, id: message.id } satisfies SeriesMessage),
      );
      return;
    }
    if (isMessage<AggregateMessage>(message, AGGREGATE)) waiting.get(message.id)?.(message.text);
  });
  return () =>
    new Promise<string>((resolve, reject) => {
      const id = nextId++;
      const deadline = setTimeout(() => {
        waiting.delete(id);
        reject(new ProblemError('CC_NOT_READY', `The primary did not answer with the workers' metrics within ${PRIMARY_ANSWER_MS} ms.`, { headers: { 'retry-after': '1' } }));
      }, PRIMARY_ANSWER_MS);
      waiting.set(id, (text) => {
        clearTimeout(deadline);
        waiting.delete(id);
        if (text === undefined) reject(new ProblemError('CC_INTERNAL', "The primary could not aggregate the workers' metrics."));
        else resolve(text);
      });
      process.send?.({ type: AGGREGATE, id } satisfies AggregateMessage);
    });
}

/** A gauge's samples labelled with their worker, so that the aggregate keeps each worker's (its label sets differ, so summing them changes nothing). */
function perWorker(metric: MetricJson, worker: string): MetricJson {
  // The type is the exposition's word at run time, whatever prom-client's declaration says.
  if ((metric.type as unknown) !== 'gauge') return metric;
  return { ...metric, aggregator: 'sum', values: metric.values.map((value) => ({ ...value, labels: { ...value.labels, worker } })) };
}
