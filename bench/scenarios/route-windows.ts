import { fmt, out } from '../lib/format.js';
import { CHURN_INTERVAL_MS, type RouteKey } from '../lib/knobs.js';
import { assertRunning } from '../lib/processes.js';
import { leanTarget, newMinutePaths, type Target } from '../lib/requests.js';
import type { Bench } from '../lib/servers.js';
import { measureWindow, type WindowOptions, type WindowResult } from '../lib/window.js';
import { startChurn } from './churn.js';
import { bodyName, type Preflight } from './preflight.js';

interface Planned {
  target: Target;
  options?: WindowOptions;
}

/**
 * The windows, in order: every route between constant bare windows; each persona at a fixed
 * minute beside its same-bytes bare route and its durable same-body route, then the same for
 * its lean connect answer (`?view=session`); then a new minute on every request, full and
 * lean (and mars under churn). The fixed-minute windows of both views come before any window
 * that makes a new result per request: such a window leaves its results, HUDs and trace
 * records to the collector, which the window after it paid for (mars lean at a fixed minute
 * used 938 µs of CPU per request right after the full answer's new-minute window; in a fresh
 * server, after the full answer's fixed-minute window, 510 µs against the full answer's 578).
 */
function plan(bench: Bench, preflight: Preflight): Planned[] {
  const { knobs, brain } = bench;
  const bare = bench.bare.target;
  const planned: Planned[] = [{ target: bare }];
  for (const target of bench.targets) {
    planned.push({ target });
    if (target.personaTargets) {
      const route = target.key as RouteKey;
      const views = [target, leanTarget(target)];
      for (const each of views) {
        if (each !== target) planned.push({ target: each });
        const same = preflight.same.get(bodyName(route, each.view));
        if (same) planned.push({ target: same });
        const floor = preflight.durable.get(bodyName(route, each.view));
        if (floor) planned.push({ target: floor });
      }
      for (const each of views) {
        planned.push({
          target: { ...each, key: 'minute', route, label: `${each.label}, a new minute every request` },
          options: { nextPath: newMinutePaths(new URL(each.url).pathname, brain.manifest, each.view) },
        });
      }
      if (route === 'mars' && knobs.BENCH_CHURN === '1') {
        planned.push({
          target: { ...target, key: 'churn', route, label: `${target.label}, today's memory appended every ${CHURN_INTERVAL_MS} ms` },
          options: { during: () => startChurn(brain.dir, brain.manifest) },
        });
      }
    }
    planned.push({ target: bare });
  }
  return planned;
}

/** Every route's windows, the bare ones measured on the bare server, the rest on the service. */
export async function measureRouteWindows(bench: Bench, preflight: Preflight): Promise<WindowResult[]> {
  const planned = plan(bench, preflight);
  const windows: WindowResult[] = [];
  for (const [index, { target, options }] of planned.entries()) {
    process.stdout.write(`[${index + 1}/${planned.length}] ${target.label.trim()} … `);
    const bareSide = target.key === 'bare' || target.key === 'same' || target.key === 'durable';
    const window = await measureWindow(index, target, bench.knobs, bareSide ? { pids: () => [bench.bare.spawned.pid] } : bench.server.measured, options);
    windows.push(window);
    out(fmt.window(window));
    assertRunning(bench.server.spawned, target.label.trim());
  }
  return windows;
}
