/**
 * Where the workflows' contracts used to live, kept as a re-export so older imports still resolve.
 * Each workflow's contract (type name, id, input/result, signals, queries, updates) belongs to the
 * domain that starts it: domain/<area>/workflow-contract.ts; the search attributes are in
 * domain/workflow-search-attributes.ts. Import from there in new code.
 */
export { searchAttributes, searchAttributeRegistrations } from '../domain/workflow-search-attributes.js';
export * from '../domain/notifications/workflow-contract.js';
export { NotificationErrorType as ErrorType } from '../domain/notifications/workflow-contract.js';
export * from '../domain/tenants/workflow-contract.js';
export { chatRoomName } from '../domain/tenants/chat-room.js';
export * from '../domain/tenants/provisioned-event.js';
export * from '../domain/service-keys/workflow-contract.js';
export * from '../domain/billing/workflow-contract.js';
export * from '../domain/webhooks/workflow-contract.js';
export { retryDelay } from '../domain/webhooks/retry-schedule.js';
