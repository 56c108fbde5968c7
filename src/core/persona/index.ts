export * from './live-context.js';
export * from './personas.js';
export * from './render.js';
export * from './tools.js';
export * from './session.js';
export * from './voices.js';
export * from './call-link.js';
