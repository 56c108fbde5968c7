/*
 * What the OpenAPI document says of the context routes beyond their schemas (context.ts,
 * context-answers.ts): each route's operation id, summary and description, which
 * routes/context.ts and routes/topic.ts put in their route schema as they are.
 */

/** `GET /context/:persona` as OpenAPI describes it. */
export const PERSONA_CONTEXT_OPERATION = {
  operationId: 'getPersonaContext',
  summary: "A voice persona's compiled prompt (GET /context/mars, GET /context/venus)",
  description: `The persona's trusted blocks (identity first, then the runtime policy, the character —
or the operator's \`personas/<persona>.md\` — hard rules and tools: worker-stable), the
voice runtime scope (surface-stable) and the date-and-time line in the operator's zone
(volatile, last of the system prompt); then, as advisory input, the live context
(mars: feelings from the two newest daily notes, SOUL.md core, recurring themes; venus:
tasks by priority, today's events, unread count, newest meeting) and the topic when
\`topicId\` is given. Two calls that differ only in time share every stable boundary hash
and the \`routeKey\`.

Every brain source degrades to a warning (missing, unsafe, binary or invalid UTF-8,
over its cap, broken heartbeat JSON, no brain root at all): the persona still gets
its prompt. Brain-derived text is PII-scrubbed; \`redactions\` counts the live context's
redactions too.

The answer is a drop-in for a realtime voice server (docs/voice-server.md): \`session\` is the
object to send to the realtime calls endpoint or \`session.update\` unchanged
(\`{type: "realtime", instructions, audio: {output: {voice}}, tools}\`; the model is the
caller's). Its \`instructions\` are the delivered instructions (\`systemPrompt\`, a blank
line, \`inputPrompt\`: the full answer carries each text once, so it has no top-level
\`instructions\`; \`format=text\` answers them as delivered) made realtime-safe ASCII whatever \`sanitize\` says (\`sanitize=ascii\` makes every prompt ASCII too; the
trace records \`sessionInstructions: "ascii"\`), and its \`voice\` is the persona's
OpenAI voice from the brain's \`personas/settings.json\` (default: mars \`ash\`, venus
\`coral\`). Its \`tools\` (only there: the answer has no top-level \`tools\`; descriptions in ASCII) are
\`{type: "function", name, description, parameters}\` with a strict JSON Schema each; by
default their names come from the voice server's read-only allow-list (mars: search,
query, get_page, read_article; venus: search, query, get_page, list_pages, find_experts,
get_recent_salience, get_recent_transcripts, read_article), narrowed, renamed or reworded
by the brain's \`personas/tools.json\`; write-shaped tools only with
\`VOICE_WRITE_TOOLS=true\`. The tool names the prompt mentions are exactly these.

A call link always connects: an empty or unknown \`timezone\` compiles in the operator's zone
(heartbeat-state, else \`DEFAULT_TIMEZONE\`) with a \`timezone-invalid:\` warning naming the value
(PII-scrubbed, escaped, at most 64 characters), traced only by its length and a digest prefix,
so a refresh of that connect compiles in the operator's zone too (\`POST /compile\` stays strict:
there an invalid zone is a 400). And an unusable \`topicId\` never fails the call. It gives the
generic context and a warning that starts with a stable code — \`topic-unsafe:\` (not a
slug, or given twice: nothing is read), \`topic-missing:\` (no such file) or
\`topic-unreadable:\` (refused, unreadable, binary or empty) — and is traced like any
other delivery (an unsafe id only by its length and a digest prefix). A \`topicName\`
without a topic block to put it in is said in one sanitised advisory topic line, source
\`request:topicName\` ("Called from the topic 'Flat hunt'; no notes on it yet."). Delivered like
\`POST /compile\`: traced before it is sent, \`ETag\`/\`If-None-Match\`, \`format=text\`,
\`x-run-id\`.

\`provider\` names the realtime API the answer is for (docs/providers.md):
\`openai\` (default) answers \`session\`; \`azure\` answers the same \`session\` (Azure
OpenAI takes OpenAI's shape; the model you add is your deployment name); \`gemini\` answers
\`setup\` instead — Gemini Live's \`{generationConfig: {responseModalities: ["AUDIO"],
speechConfig: {voiceConfig: {prebuiltVoiceConfig: {voiceName}}}}, systemInstruction:
{parts: [{text}]}, tools: [{functionDeclarations}]}\`, the same realtime-safe instructions,
the persona's Gemini voice (mars Orus, venus Aoede by default) and the tools' parameters
translated to the schema subset Gemini takes (what a translation loses is said in the
description and in \`warnings\`, \`gemini-schema:\`). The cache plan is judged for the
provider (\`cache.provider\`; Gemini Live caches nothing). Anything else is a 400.

\`model\` names the realtime model the call runs on; it is recorded with the run and chooses
how the call's refreshes reach the model, which \`delivery\` says as the refresh will answer
it (docs/providers.md): \`conversation-item\` (OpenAI, Azure), \`client-content\` (a Gemini
Live model that takes client content mid-session), \`reconnect\` (Gemini 3.1 and later; a
Gemini model not known, or none named, gets it too, with a \`delivery-model-unknown:\`
warning).

\`engine\` names the model or engine the prompt is for; it enters \`cache.routeKey\` only (two
engines never share one; every boundary hash stays). \`?hud=1\` adds \`hud\`, the heads-up
display of every brain file the compile looked for.

\`view=session\` answers only what a realtime connect uses (\`PersonaSession\`): \`session\`
(or \`setup\`), \`runId\`, \`persona\`, \`provider\`, \`warnings\`, \`delivery\`, \`promptSha256\`
and \`cacheBoundaries\` (each boundary's class, prefix length and digest, to match the connect
to its trace); it has its own \`ETag\` (suffix \`.session\`), is traced like the full answer
(the request records \`view\`), and is a 400 with \`format=text\` or \`hud=1\`.`,
} as const;

/** `GET /context/topic/:topicId` as OpenAPI describes it. */
export const TOPIC_CONTEXT_OPERATION = {
  operationId: 'getTopicContext',
  summary: 'The topic block alone, compiled and traced',
  description: `\`topics/<topicId>.md\` (newest part kept when over its cap), PII-scrubbed and delivered
like a persona prompt so it is digested and traced: the topic is the one advisory line
of \`inputPrompt\` (\`{"block":"topic",...}\`), ready for a session's data channel;
\`systemPrompt\` is only a short built-in frame (identity, runtime policy, voice scope)
with no clock, so the \`ETag\` changes only when the topic does. The trace subject is
\`persona: topic\`. A missing or unusable topic is a 404 (traced as a failed delivery).

\`delivery\` says how the topic reaches the call's model mid-session, chosen by \`provider\`
and \`model\` as a refresh's is (docs/providers.md): \`conversation-item\` (OpenAI, Azure),
\`client-content\` (a Gemini Live model that takes client content mid-session), or
\`reconnect\` (Gemini 3.1 and later: put it in the setup of a new connection; a model not
known gets it too, with a \`delivery-model-unknown:\` warning).`,
} as const;
