/**
 * The only way the viewer builds DOM. Text always becomes text nodes (never HTML), links
 * may only point at the page's own hash routes, and listeners are attached in code: the
 * CSP forbids inline handlers and no trace text can turn into markup. Bidi controls in any
 * text shown become visible markers, so no text is shown in another order than its bytes.
 */

/**
 * Bidi embeddings, overrides, isolates and marks (the same set as the CLI's
 * `src/cli/terminal-text.ts`): U+202E would show "Pay the invoice of $1000 today" for other
 * bytes. Copy buttons copy the real bytes; only what is shown changes.
 */
const BIDI = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** `text` with every bidi control shown as `⟨U+202E⟩`. */
export function visibleText(text: string): string {
  return text.replace(BIDI, (char) => `⟨U+${char.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}⟩`);
}

export type Child = Node | string | number | null | undefined | false | Child[];

export interface Props {
  class?: string;
  /** A hash route of this page (`#/runs/...`); anything else is refused. */
  href?: string;
  title?: string;
  id?: string;
  type?: string;
  name?: string;
  value?: string;
  placeholder?: string;
  autocomplete?: string;
  ariaLabel?: string;
  role?: string;
  data?: Record<string, string>;
  onClick?: (event: MouseEvent) => void;
  onSubmit?: (event: SubmitEvent) => void;
}

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, props: Props = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  if (props.class) element.className = props.class;
  if (props.href !== undefined) {
    if (!props.href.startsWith('#')) throw new Error('links stay inside the viewer');
    element.setAttribute('href', props.href);
  }
  if (props.title !== undefined) element.title = visibleText(props.title);
  if (props.id !== undefined) element.id = props.id;
  if (props.type !== undefined) element.setAttribute('type', props.type);
  if (props.name !== undefined) element.setAttribute('name', props.name);
  if (props.value !== undefined) (element as HTMLInputElement).value = props.value;
  if (props.placeholder !== undefined) element.setAttribute('placeholder', props.placeholder);
  if (props.autocomplete !== undefined) element.setAttribute('autocomplete', props.autocomplete);
  if (props.ariaLabel !== undefined) element.setAttribute('aria-label', props.ariaLabel);
  if (props.role !== undefined) element.setAttribute('role', props.role);
  for (const [key, value] of Object.entries(props.data ?? {})) element.dataset[key] = value;
  if (props.onClick) element.addEventListener('click', props.onClick as EventListener);
  if (props.onSubmit) element.addEventListener('submit', props.onSubmit as EventListener);
  append(element, children);
  return element;
}

export function append(parent: Node, children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(parent, child);
    else if (typeof child === 'string' || typeof child === 'number') parent.appendChild(document.createTextNode(visibleText(String(child))));
    else parent.appendChild(child);
  }
}

/** Replaces everything in `parent`. */
export function replace(parent: Element, ...children: Child[]): void {
  parent.replaceChildren();
  append(parent, children);
}

/** A section's heading with its buttons beside it, not inside it: a screen reader reads the heading alone. */
export function headed(tag: 'h2' | 'h3', title: Child, ...controls: Child[]): HTMLElement {
  return h('div', { class: 'head-row' }, h(tag, {}, title), ...controls);
}
