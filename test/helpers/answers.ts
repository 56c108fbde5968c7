/**
 * A compile answer's instructions: the `instructions` member where the answer carries it
 * (`POST /compile`, the topic route), else its two prompts joined, as a persona's full answer
 * carries each text once (the pair; the join is `format=text`, and `session.instructions` in ASCII).
 */
export function instructionsOf(body: { systemPrompt: string; inputPrompt: string | null; instructions?: string | undefined }): string {
  return body.instructions ?? (body.inputPrompt === null ? body.systemPrompt : `${body.systemPrompt}\n\n${body.inputPrompt}`);
}
