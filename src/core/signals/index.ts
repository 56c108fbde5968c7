export * from './calendar.js';
export * from './inbox.js';
export * from './lexicon.js';
export * from './markdown.js';
export * from './meetings.js';
export * from './memory.js';
export * from './tasks.js';
export * from './topic.js';
