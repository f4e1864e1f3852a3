/**
 * What the LLM stand-in "thinks": a deterministic function of the conversation and the offered
 * tools, so that tests can assert which tools an agent calls and what it answers.
 *
 * - A new question (no tool results after the last user message): call every offered tool whose
 *   keywords occur in the question (several at once, as real models do), else answer in text.
 * - After tool results: an answer composed from them, with their figures written out as
 *   `1234.56 EUR` (two decimals, no thousands separator).
 */
export interface Message {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content?: string | null | { type: string; text?: string }[];
  tool_calls?: { id: string; type: 'function'; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
}

export type Decision =
  { kind: 'tools'; calls: { name: string; arguments: Record<string, unknown> }[] } | { kind: 'answer'; text: string };

const KEYWORDS: [RegExp, string][] = [
  [/cash ?flow|inflow|outflow|money (in|out)/i, 'get_cashflow'],
  [/\b(cash|bank balance|balance|revenue|kpis?|receivables?|payables?|key figures)\b/i, 'get_kpis'],
  [/\b(overdue|late|unpaid|chase|owe)\b/i, 'get_overdue_invoices'],
];

const text = (m: Message) =>
  typeof m.content === 'string' ? m.content : (m.content ?? []).map((p) => p.text ?? '').join('');
const money = (n: number, currency: string) => `${n.toFixed(2)} ${currency}`;

export function decide(messages: Message[], offeredTools: string[]): Decision {
  const lastUser = messages.map((m) => m.role).lastIndexOf('user');
  const question = lastUser >= 0 ? text(messages[lastUser]!) : '';
  const after = messages.slice(lastUser + 1);
  const results = after.filter((m) => m.role === 'tool');
  if (results.length === 0) {
    const calls: { name: string; arguments: Record<string, unknown> }[] = [];
    for (const [re, tool] of KEYWORDS) {
      if (!re.test(question) || !offeredTools.includes(tool) || calls.some((c) => c.name === tool)) continue;
      // "cash flow" also matches "cash": the cash-flow question alone does not ask for the KPIs
      if (
        tool === 'get_kpis' &&
        calls.some((c) => c.name === 'get_cashflow') &&
        !/balance|revenue|kpi|receivable|payable/i.test(question)
      )
        continue;
      const months = /(\d{1,2}) months?/i.exec(question);
      calls.push({ name: tool, arguments: tool === 'get_cashflow' ? { months: months ? Number(months[1]) : 3 } : {} });
    }
    if (calls.length) return { kind: 'tools', calls };
    return {
      kind: 'answer',
      text: 'I can answer questions about your cash, cash flow, overdue invoices and key figures. What would you like to know?',
    };
  }
  // which tool each result answers
  const names = new Map<string, string>();
  for (const m of after) for (const tc of m.tool_calls ?? []) names.set(tc.id, tc.function.name);
  const parts = results.map((m) => describe(names.get(m.tool_call_id ?? '') ?? 'tool', text(m)));
  return { kind: 'answer', text: parts.join(' ') };
}

function describe(tool: string, content: string): string {
  let r: Record<string, unknown>;
  try {
    r = JSON.parse(content) as Record<string, unknown>;
  } catch {
    return `The ${tool} tool answered something I cannot read.`;
  }
  if (typeof r.error === 'string') return `I could not get the figures (${tool}): ${r.error}`;
  const cur = String(r.currency ?? '');
  if (tool === 'get_kpis') {
    const journals = (r.cashJournals as { name: string; balance: number }[] | undefined) ?? [];
    return (
      `Your cash balance is ${money(Number(r.cashBalance), cur)}` +
      (journals.length ? ` (${journals.map((j) => `${j.name} ${money(j.balance, cur)}`).join(', ')}).` : '.') +
      ` Revenue this month is ${money(Number(r.revenue), cur)}.` +
      ` Customers owe ${money(Number(r.receivables), cur)}, of which ${money(Number(r.overdueReceivables), cur)} is overdue on ${r.overdueInvoiceCount} invoices.` +
      ` You owe vendors ${money(Number(r.payables), cur)}.`
    );
  }
  if (tool === 'get_overdue_invoices') {
    const o = r.overdueInvoices as {
      count: number;
      total: number;
      oldest: { number: string; customer: string | null; daysOverdue: number; amountDue: number }[];
    };
    const b = r.unreconciledBankLines as { count: number; total: number };
    if (o.count === 0) return `No customer invoice is overdue. ${b.count} bank statement lines are not reconciled.`;
    return (
      `${o.count} customer invoices are overdue, ${money(o.total, cur)} in total.` +
      ` Chase first: ${o.oldest.map((i) => `${i.number} (${i.customer ?? 'no customer'}, ${i.daysOverdue} days, ${money(i.amountDue, cur)})`).join('; ')}.` +
      ` ${b.count} bank statement lines are not reconciled (${money(b.total, cur)}).`
    );
  }
  if (tool === 'get_cashflow') {
    const months = r.months as { month: string; inflow: number; outflow: number; net: number }[];
    const t = r.totals as { inflow: number; outflow: number; net: number };
    return (
      `Over the last ${months.length} months ${money(t.inflow, cur)} came in and ${money(t.outflow, cur)} went out, net ${money(t.net, cur)}.` +
      ` ${months.map((m) => `${m.month}: in ${money(m.inflow, cur)}, out ${money(m.outflow, cur)}`).join('; ')}.`
    );
  }
  return `The ${tool} tool answered: ${content.slice(0, 500)}`;
}

/** Splits an answer into streamed pieces: a word and its following space each. */
export const pieces = (answer: string) => answer.match(/\S+\s*/g) ?? [answer];

/** Rough token counts (about four characters a token), deterministic. */
export const tokens = (s: string) => Math.max(1, Math.ceil(s.length / 4));
export const promptText = (messages: Message[]) =>
  messages.map((m) => text(m) + JSON.stringify(m.tool_calls ?? '')).join('\n');
