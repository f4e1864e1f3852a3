import { type ActivityOptions, log, proxyActivities, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import type { WelcomeEmailInput, WelcomeEmailResult } from '../domain/notifications/workflow-contract.js';
import { searchAttributes } from '../domain/workflow-search-attributes.js';

const welcomeActivityOptions: ActivityOptions = {
  startToCloseTimeout: '30 seconds',
  // Keep trying for a week: the notifications service or the mail relay may be down for a while.
  scheduleToCloseTimeout: '7 days',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
};

const { requestWelcomeEmail } = proxyActivities<Activities>(welcomeActivityOptions);

/**
 * Sends the welcome e-mail of a tenant through the notifications service
 * (workflow id `welcome:<tenant>:<n>`). Started after `client.provisioned`, or again by support.
 */
export async function sendWelcomeEmail(input: WelcomeEmailInput): Promise<WelcomeEmailResult> {
  upsertSearchAttributes([{ key: searchAttributes.currentStep, value: 'request-welcome-email' }]);
  const result = await requestWelcomeEmail.executeWithOptions(
    {
      ...welcomeActivityOptions,
      summary: `POST /v1/welcome for ${input.email} (workspace ${input.workspace})`,
    },
    [input],
  );
  upsertSearchAttributes([{ key: searchAttributes.currentStep, value: 'done' }]);
  log.info('welcome e-mail sent', { workflowId: workflowInfo().workflowId, duplicate: result.duplicate });
  return result;
}
