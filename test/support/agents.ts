/**
 * The agents' side of the platform for a test: the LLM stand-in (sandbox/llm), the data service
 * and the agents service on free ports, over the run's real PostgreSQL and Redis, plus the
 * configuration an account API needs to reach them.
 */
import type { Config } from '../../lib/config.js';
import { freePort } from '../../scripts/local-servers.js';
import { startLlmStandIn } from '../../sandbox/llm/server.js';
import { startAgents } from '../../services/agents/server.js';
import { startData } from '../../services/data/server.js';

export const TEST_LLM_KEY = 'test-llm-key-0123456789';

/** Settings for `erpTestConfig`/`testConfig`: where the agents and data services listen and the model is. */
export async function agentsSettings(llmUrl: string): Promise<Record<string, string>> {
  const [agentsPort, dataPort] = await Promise.all([freePort(), freePort()]);
  return {
    AGENTS_PORT: String(agentsPort),
    AGENTS_URL: `http://127.0.0.1:${agentsPort}`,
    DATA_PORT: String(dataPort),
    DATA_URL: `http://127.0.0.1:${dataPort}`,
    LLM_URL: llmUrl,
    LLM_KEY: TEST_LLM_KEY,
    LLM_MODEL: 'plana-standin-1',
  };
}

export const startTestLlm = (chunkDelayMs = 0) => startLlmStandIn({ apiKey: TEST_LLM_KEY, chunkDelayMs });

/** The data and agents services of `cfg` (see agentsSettings). */
export async function startAgentServices(cfg: Config) {
  const data = await startData(cfg);
  const agents = await startAgents(cfg);
  return {
    data,
    agents,
    async close() {
      await agents.close();
      await data.close();
    },
  };
}

/** The events of a Server-Sent Events text, in order. */
export function sseEvents(text: string): { event: string; data: unknown }[] {
  return text
    .split('\n\n')
    .filter((block) => block.trim())
    .map((block) => {
      const event = /^event: (.*)$/m.exec(block)?.[1] ?? 'message';
      const data = /^data: (.*)$/m.exec(block)?.[1];
      return { event, data: data === undefined ? undefined : JSON.parse(data) };
    });
}
