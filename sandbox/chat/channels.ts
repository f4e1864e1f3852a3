/**
 * The chat stand-in's channels, as Mattermost keeps them: ids, the checks of a new channel
 * (model.Channel.IsValid), archive and restore. In memory and, with a file, saved to it on every
 * change so a restarted stand-in keeps them.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export interface Channel {
  id: string;
  create_at: number;
  update_at: number;
  delete_at: number;
  team_id: string;
  type: 'O' | 'P';
  display_name: string;
  name: string;
  header: string;
  purpose: string;
  last_post_at: number;
  total_msg_count: number;
  extra_update_at: number;
  creator_id: string;
  scheme_id: string | null;
  props: null;
  group_constrained: boolean | null;
  shared: boolean | null;
  total_msg_count_root: number;
  policy_id: string | null;
  last_root_post_at: number;
}

// Mattermost ids: 16 random bytes in base32 with its own alphabet, 26 lower-case characters.
const ID_ALPHABET = 'ybndrfg8ejkmcpqxot1uwisza345h769';
export function newMattermostId(): string {
  let bits = 0;
  let value = 0;
  let out = '';
  for (const byte of randomBytes(16)) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += ID_ALPHABET[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += ID_ALPHABET[(value << (5 - bits)) & 31];
  return out;
}

const VALID_ID = /^[a-z0-9]{26}$/;
// model.IsValidChannelIdentifier: lower-case letters, digits, '-' and '_', starting and ending with a letter or digit
const VALID_NAME = /^[a-z0-9]([a-z0-9_-]*[a-z0-9])?$/;

/** An error answered in Mattermost's shape (`{ id, message, detailed_error, request_id, status_code }`). */
export class MattermostError extends Error {
  constructor(
    readonly statusCode: number,
    readonly id: string,
    message: string,
    readonly where = '',
  ) {
    super(message);
  }
}

const text = (value: unknown) => (typeof value === 'string' ? value : '');

export class ChannelStore {
  private readonly channels = new Map<string, Channel>();

  constructor(private readonly file: string | undefined) {
    if (file && existsSync(file)) {
      for (const c of JSON.parse(readFileSync(file, 'utf8')) as Channel[]) this.channels.set(c.id, c);
    }
  }

  byName(team: string, name: string): Channel | undefined {
    return [...this.channels.values()].find((c) => c.team_id === team && c.name === name);
  }

  byId(id: string): Channel {
    if (!VALID_ID.test(id)) {
      throw new MattermostError(
        400,
        'api.context.invalid_url_param.app_error',
        'Invalid or missing channel_id parameter in request URL.',
      );
    }
    const c = this.channels.get(id);
    if (!c)
      throw new MattermostError(
        404,
        'app.channel.get.existing.app_error',
        'Unable to find the existing channel.',
        'GetChannel',
      );
    return c;
  }

  /** `POST /api/v4/channels` in `teamId` by `creator`: the body checked as Mattermost checks it. */
  create(body: Partial<Record<keyof Channel, unknown>>, teamId: string, creator: string): Channel {
    if (typeof body !== 'object' || Array.isArray(body)) {
      throw new MattermostError(
        400,
        'api.context.invalid_body_param.app_error',
        'Invalid or missing channel in request body.',
      );
    }
    const team = text(body.team_id);
    if (team !== teamId) {
      throw new MattermostError(
        403,
        'api.context.permissions.app_error',
        'You do not have the appropriate permissions.',
      );
    }
    const name = text(body.name);
    const displayName = text(body.display_name);
    const purpose = text(body.purpose);
    const type = body.type;
    if (name.length < 1 || name.length > 64 || !VALID_NAME.test(name)) {
      throw new MattermostError(400, 'model.channel.is_valid.name.app_error', 'Invalid name.', `id=`);
    }
    if ([...displayName].length < 1 || [...displayName].length > 64) {
      throw new MattermostError(400, 'model.channel.is_valid.display_name.app_error', 'Invalid display name.');
    }
    if (type !== 'O' && type !== 'P') {
      throw new MattermostError(400, 'model.channel.is_valid.type.app_error', 'Invalid type.');
    }
    if ([...purpose].length > 250) {
      throw new MattermostError(400, 'model.channel.is_valid.purpose.app_error', 'Invalid purpose.');
    }
    if (this.byName(team, name)) {
      throw new MattermostError(
        400,
        'store.sql_channel.save_channel.exists.app_error',
        'A channel with that name already exists on the same team.',
        'CreateChannel',
      );
    }
    const now = Date.now();
    const channel: Channel = {
      id: newMattermostId(),
      create_at: now,
      update_at: now,
      delete_at: 0,
      team_id: team,
      type,
      display_name: displayName,
      name,
      header: text(body.header),
      purpose,
      last_post_at: now,
      total_msg_count: 0,
      extra_update_at: 0,
      creator_id: creator,
      scheme_id: null,
      props: null,
      group_constrained: null,
      shared: false,
      total_msg_count_root: 0,
      policy_id: null,
      last_root_post_at: now,
    };
    this.channels.set(channel.id, channel);
    this.save();
    return channel;
  }

  /** Archives a channel (sets delete_at); an archived one is Mattermost's 400. */
  archive(id: string): void {
    const c = this.byId(id);
    if (c.delete_at > 0) {
      throw new MattermostError(
        400,
        'api.channel.delete_channel.deleted.app_error',
        'The channel has been archived or deleted.',
      );
    }
    const now = Date.now();
    c.delete_at = now;
    c.update_at = now;
    this.save();
  }

  /** Unarchives a channel; one that is not archived is Mattermost's 400. */
  restore(id: string): Channel {
    const c = this.byId(id);
    if (c.delete_at === 0) {
      throw new MattermostError(
        400,
        'api.channel.restore_channel.restored.app_error',
        'Unable to unarchive channel. The channel is not archived.',
      );
    }
    c.delete_at = 0;
    c.update_at = Date.now();
    this.save();
    return c;
  }

  private save() {
    if (!this.file) return;
    mkdirSync(path.dirname(this.file), { recursive: true });
    writeFileSync(`${this.file}.tmp`, JSON.stringify([...this.channels.values()], null, 2));
    renameSync(`${this.file}.tmp`, this.file);
  }
}
