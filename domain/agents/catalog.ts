/**
 * The agents a workspace can talk to, and the tools each may call. An agent is a system prompt plus
 * a set of tools; the tools read the workspace's ERP figures through the data service
 * (services/data), never anything else. The model only ever sees tool names and the arguments
 * below: the workspace is not an argument, it is fixed by the call (see workspace-grant.ts).
 */
import type { ChatCompletionTool } from 'openai/resources/chat/completions';

export type ToolName = 'get_kpis' | 'get_cashflow' | 'get_overdue_invoices';

export const TOOLS: Record<ToolName, ChatCompletionTool> = {
  get_kpis: {
    type: 'function',
    function: {
      name: 'get_kpis',
      description:
        "The workspace's key figures today: cash balance per bank and cash journal, revenue this month, receivables and overdue receivables, payables. Amounts in the company currency.",
      parameters: { type: 'object', properties: {}, additionalProperties: false },
    },
  },
  get_cashflow: {
    type: 'function',
    function: {
      name: 'get_cashflow',
      description:
        'Money in and out of the bank and cash accounts per month, oldest first, the current month so far last.',
      parameters: {
        type: 'object',
        properties: { months: { type: 'integer', minimum: 1, maximum: 24, description: 'How many months, default 6' } },
        additionalProperties: false,
      },
    },
  },
  get_overdue_invoices: {
    type: 'function',
    function: {
      name: 'get_overdue_invoices',
      description:
        'Customer invoices past their due date and not paid (count, total, the oldest five), and bank statement lines not reconciled yet.',
      parameters: { type: 'object', properties: {}, additionalProperties: false },
    },
  },
};

export interface Agent {
  id: string;
  name: string;
  description: string;
  instructions: string;
  tools: ToolName[];
}

export const AGENTS: Record<string, Agent> = {
  finance: {
    id: 'finance',
    name: 'Finance assistant',
    description: 'Answers questions about cash, cash flow, overdue invoices and the key figures of the workspace.',
    instructions:
      "You are the finance assistant of a small business. Answer questions about the business's cash, cash flow, invoices and key figures. " +
      'Always call a tool to get figures; never guess a number. Answer briefly, with amounts and their currency.',
    tools: ['get_kpis', 'get_cashflow', 'get_overdue_invoices'],
  },
  collections: {
    id: 'collections',
    name: 'Collections assistant',
    description: 'Tells which customer invoices are overdue and what to chase first.',
    instructions:
      'You help collect overdue customer invoices. Call get_overdue_invoices for figures; never guess. Answer briefly.',
    tools: ['get_overdue_invoices'],
  },
};

export const AGENT_ID_PATTERN = '^[a-z][a-z0-9-]{0,39}$';
export const findAgent = (id: string): Agent | undefined => (Object.hasOwn(AGENTS, id) ? AGENTS[id] : undefined);
