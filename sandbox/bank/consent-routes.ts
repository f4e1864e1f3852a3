/**
 * The consent resources of the XS2A interface (`/v1/consents…`, with their one implicit
 * authorisation) and the SCA redirect the PSU goes through (`/sca/{authorisationId}`: the page, its
 * approve/reject form, and the PSU's withdrawal).
 */
import type { FastifyInstance } from 'fastify';
import type { Consents } from './consents.js';
import { PsuError } from './xs2a.js';

export function consentRoutes(app: FastifyInstance, consents: Consents, baseUrl: () => string) {
  app.post('/v1/consents', async (req, reply) => {
    const consent = consents.establish(req);
    reply.header('aspsp-sca-approach', 'REDIRECT').header('location', `/v1/consents/${consent.consentId}`);
    return reply.code(201).send({
      consentStatus: consent.status,
      consentId: consent.consentId,
      _links: {
        scaRedirect: { href: `${baseUrl()}/sca/${consent.authorisationId}` },
        self: { href: `/v1/consents/${consent.consentId}` },
        status: { href: `/v1/consents/${consent.consentId}/status` },
        scaStatus: { href: `/v1/consents/${consent.consentId}/authorisations/${consent.authorisationId}` },
      },
    });
  });

  app.get<{ Params: { id: string } }>('/v1/consents/:id', async (req) => {
    const c = consents.fromPath(req.params.id);
    return {
      access: c.access,
      recurringIndicator: c.recurringIndicator,
      validUntil: c.validUntil,
      frequencyPerDay: c.frequencyPerDay,
      lastActionDate: c.lastActionDate,
      consentStatus: c.status,
    };
  });

  app.get<{ Params: { id: string } }>('/v1/consents/:id/status', async (req) => ({
    consentStatus: consents.fromPath(req.params.id).status,
  }));

  app.get<{ Params: { id: string } }>('/v1/consents/:id/authorisations', async (req) => ({
    authorisationIds: [consents.fromPath(req.params.id).authorisationId],
  }));

  app.get<{ Params: { id: string; auth: string } }>('/v1/consents/:id/authorisations/:auth', async (req) => {
    const c = consents.fromPath(req.params.id);
    if (c.authorisationId !== req.params.auth) throw new PsuError(403, 'RESOURCE_UNKNOWN', 'Unknown authorisation.');
    return { scaStatus: c.status === 'valid' ? 'finalised' : c.status === 'rejected' ? 'failed' : 'received' };
  });

  app.delete<{ Params: { id: string } }>('/v1/consents/:id', async (req, reply) => {
    const c = consents.fromPath(req.params.id);
    c.status = 'terminatedByTpp';
    return reply.code(204).send();
  });
}

export function scaRoutes(app: FastifyInstance, consents: Consents, bankName: string) {
  // the SCA redirect: the page the PSU sees, and its form
  app.get<{ Params: { auth: string } }>('/sca/:auth', async (req, reply) => {
    const c = consents.ofAuthorisation(req.params.auth);
    if (!c)
      return reply
        .code(404)
        .type('text/html')
        .send('<!doctype html><title>Unknown</title><p>This authorisation is unknown.</p>');
    const scope = Object.keys(c.access).join(', ');
    return reply.type('text/html; charset=utf-8').send(`<!doctype html>
<html><head><meta charset="utf-8"><title>${bankName}: confirm access</title></head>
<body><h1>${bankName}</h1>
<p>A third party asks to read your accounts (${scope}) until ${c.validUntil}, up to ${c.frequencyPerDay} times a day.</p>
<form method="post" action="/sca/${c.authorisationId}">
<label>TAN <input name="tan" value="123456"></label>
<button name="decision" value="approve">Approve</button>
<button name="decision" value="reject">Reject</button>
</form></body></html>`);
  });

  app.post<{ Params: { auth: string }; Body: Record<string, string> }>('/sca/:auth', async (req, reply) => {
    const c = consents.ofAuthorisation(req.params.auth);
    if (!c) return reply.code(404).type('text/html').send('<!doctype html><p>This authorisation is unknown.</p>');
    consents.refresh(c);
    if (c.status !== 'received')
      return reply.code(409).type('text/html').send(`<!doctype html><p>This consent is ${c.status}.</p>`);
    const decision = req.body?.decision;
    if (decision !== 'approve' && decision !== 'reject')
      return reply.code(400).type('text/html').send('<!doctype html><p>decision must be approve or reject.</p>');
    c.status = decision === 'approve' ? 'valid' : 'rejected';
    if (c.redirectUri) return reply.code(303).header('location', c.redirectUri).send();
    return reply.type('text/html').send(`<!doctype html><p>Consent ${c.status}. You can close this page.</p>`);
  });

  // the PSU withdraws the consent in the bank's online banking (the consent's page)
  app.post<{ Params: { auth: string } }>('/sca/:auth/revoke', async (req, reply) => {
    const c = consents.ofAuthorisation(req.params.auth);
    if (!c) return reply.code(404).type('text/html').send('<!doctype html><p>This authorisation is unknown.</p>');
    if (consents.refresh(c).status !== 'valid')
      return reply.code(409).type('text/html').send(`<!doctype html><p>This consent is ${c.status}.</p>`);
    c.status = 'revokedByPsu';
    return reply.type('text/html').send('<!doctype html><p>Access withdrawn.</p>');
  });
}
