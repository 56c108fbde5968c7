import { deliveryFor, type Delivery } from '../core/persona/delivery.js';
import type { AnswerProvider } from '../core/persona/voices.js';
import type { CompileJob } from '../sources/job.js';

/**
 * How a call's mid-call refreshes reach its model, for a connect or a topic: the delivery
 * `GET /context/:persona/refresh` answers for this provider and model (`deliveryFor`), which
 * the answer says (`delivery`) and the trace records, and `job` with the warning for a model
 * whose delivery is not known added to what its read warns.
 */
export function withRefreshDelivery(provider: AnswerProvider, model: string | undefined, job: CompileJob): { delivery: Delivery; job: CompileJob } {
  const { delivery, warning } = deliveryFor(provider, model);
  if (warning === null) return { delivery, job };
  return {
    delivery,
    job: {
      async read(brain) {
        const found = await job.read(brain);
        return { ...found, warnings: [...found.warnings, warning] };
      },
    },
  };
}
