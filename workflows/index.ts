/** Every workflow the worker registers (its single `workflowsPath`). */
export { sendWelcomeEmail } from './send-welcome-email.js';
