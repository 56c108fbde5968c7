import { ContextCompilerError, createClient } from 'context-compiler';

const api = createClient({ baseUrl: 'http://context-compiler:8080', token: process.env.CC_TOKEN, timeoutMs: 2000 });
const mars = await api.context('mars', { topicId: 'real-estate' }); // prompts, digests, tools, session, warnings
const again = await api.context('mars', { topicId: 'real-estate', ifNoneMatch: mars.etag ?? '*' });
if ('notModified' in again) process.stdout.write(`unchanged since run ${mars.runId}: ${mars.instructions.length} chars\n`);
try {
  await api.trace(mars.runId);
} catch (error) {
  if (error instanceof ContextCompilerError) process.stderr.write(`${error.status} ${error.code}: ${error.detail}\n`);
}
// api.realtimeSession(persona, query), api.compile(body), api.topic(id), api.personas(), api.runs(), api.health()
