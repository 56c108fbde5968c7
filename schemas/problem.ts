import { z } from 'zod';

/** RFC 9457 problem details as this service writes them. */
export const ProblemSchema = z
  .object({
    type: z.string(),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
    code: z.string(),
    instance: z.string(),
    requestId: z.string(),
    runId: z
      .string()
      .optional()
      .meta({
        description:
          "The run this request's event was traced in (as the x-run-id header): on every problem of a compile route, so a failed compile is found from its body alone. Absent when the request failed before a run began (authentication, validation, an unknown route).",
      }),
    errors: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
  })
  .loose();
