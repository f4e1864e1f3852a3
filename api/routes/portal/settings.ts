/**
 * Workspace settings (specification §4.1 `GET/PUT /api/portal/settings`): display name, locale,
 * time zone and notification preferences. Members read, admins write; a key gets 403.
 */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { changeSettings, getSettings, NOTIFICATION_DEFAULTS, TIME_ZONES } from '../../../domain/portal/settings.js';
import { access } from '../../plugins/access.js';
import { TenantName, Text } from '../../schemas/common.js';

const Problem = Type.Ref('Problem');
const WorkspaceQuery = Type.Object({
  workspace: Type.Optional({ ...TenantName, description: 'workspace slug; or the X-Workspace header' }),
});
/** The BCP 47 tags the portal takes: a language, optionally a script and a region (what locales in use look like). */
const LOCALE_PATTERN = '^[A-Za-z]{2,3}(-[A-Za-z]{4})?(-([A-Za-z]{2}|[0-9]{3}))?$';
const preferenceKeys = Object.keys(NOTIFICATION_DEFAULTS) as (keyof typeof NOTIFICATION_DEFAULTS)[];
const Preferences = Type.Object(
  Object.fromEntries(preferenceKeys.map((k) => [k, Type.Boolean()])) as Record<
    (typeof preferenceKeys)[number],
    ReturnType<typeof Type.Boolean>
  >,
);
const SettingsSchema = Type.Object({
  displayName: Type.String(),
  locale: Type.String({ description: 'BCP 47 language tag, canonical form' }),
  timeZone: Type.String({ description: 'IANA time zone' }),
  notifications: Preferences,
  updatedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
});

export default async function settingsRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { pool } = app.deps;

  app.get(
    '/api/portal/settings',
    {
      config: { access: access.member },
      schema: {
        tags: ['settings'],
        summary: "The workspace's settings (members and admins)",
        querystring: WorkspaceQuery,
        response: { 200: SettingsSchema, 400: Problem, 401: Problem, 403: Problem },
      },
    },
    async (req) => getSettings(pool, req.memberWorkspace!.id),
  );

  app.put(
    '/api/portal/settings',
    {
      config: { access: access.admin },
      schema: {
        tags: ['settings'],
        summary: "Change the workspace's settings (admins; fields left out stay as they are)",
        description:
          '`locale` is a BCP 47 tag (stored in canonical form, e.g. `de-ch` → `de-CH`); `timeZone` an IANA name (e.g. `Europe/Zurich`, `UTC`). ' +
          'An invalid field is refused with 400 naming it, and nothing is written.',
        querystring: WorkspaceQuery,
        body: Type.Object(
          {
            displayName: Type.Optional(Text({ minLength: 1, maxLength: 100 })),
            locale: Type.Optional(
              Type.String({
                pattern: LOCALE_PATTERN,
                maxLength: 35,
                description: 'BCP 47: language[-Script][-REGION], e.g. en, de-CH, zh-Hant-TW, es-419',
              }),
            ),
            timeZone: Type.Optional(
              Type.String({
                enum: [...TIME_ZONES].sort(),
                title: 'an IANA time zone name such as Europe/Zurich, America/New_York or UTC',
                description: 'IANA time zone, e.g. Europe/Zurich, UTC',
              }),
            ),
            notifications: Type.Optional(
              Type.Object(Object.fromEntries(preferenceKeys.map((k) => [k, Type.Optional(Type.Boolean())])), {
                additionalProperties: false,
              }),
            ),
          },
          { additionalProperties: false, minProperties: 1 },
        ),
        response: { 200: SettingsSchema, 400: Problem, 401: Problem, 403: Problem },
      },
    },
    async (req) => {
      const ws = req.adminWorkspace!;
      const settings = await changeSettings(pool, ws.id, req.user!.id, req.body);
      req.log.info({ workspaceId: ws.id, fields: Object.keys(req.body) }, 'workspace settings changed');
      return settings;
    },
  );
}
