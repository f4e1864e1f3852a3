/**
 * The support chat: the Mattermost API v4 stand-in over real HTTP, and the platform's client
 * (domain/tenants/chat.ts) against it: idempotent ensure, archive and restore, errors, persistence.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startChatStandIn, type ChatStandIn } from '../../sandbox/chat/server.js';
import { createChatClient, ChatError } from '../../domain/tenants/chat.js';
import { chatRoomName } from '../../domain/tenants/chat-room.js';
import { freePort } from '../../scripts/local-servers.js';
import { tempDir } from '../support/env.js';

const TOKEN = 'test-chat-bot-token-0000000000';
let chat: ChatStandIn;
let port: number;
let dir: string;

const client = () => createChatClient({ baseUrl: chat.url, token: TOKEN, teamId: chat.teamId });
const api = (path: string, init: RequestInit = {}, token = TOKEN) =>
  fetch(`${chat.url}/api/v4${path}`, {
    ...init,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...(init.headers ?? {}) },
  });

let n = 0;
const room = () => {
  n += 1;
  const name = chatRoomName(`tenant-${process.pid}-${n}`, n);
  return { name, displayName: `Support ${name}`, purpose: `Support for tenant ${n}` };
};

beforeAll(async () => {
  port = await freePort();
  dir = tempDir('chat');
  chat = await startChatStandIn({ port, token: TOKEN, dir });
});

afterAll(async () => {
  await chat?.close();
});

describe('chatRoomName', () => {
  it('pads the project id to 6 digits and keeps longer ids whole', () => {
    expect(chatRoomName('acme', 42)).toBe('support-acme-000042');
    expect(chatRoomName('big-co', 1234567)).toBe('support-big-co-1234567');
  });
});

describe('the Mattermost API v4 stand-in', () => {
  it('answers the ping without a token and refuses other calls without a valid one, as Mattermost does', async () => {
    expect(await (await fetch(`${chat.url}/api/v4/system/ping`)).json()).toMatchObject({ status: 'OK' });
    const res = await api(`/teams/${chat.teamId}/channels/name/anything`, {}, 'wrong-token');
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ id: 'api.context.session_expired.app_error', status_code: 401 });
  });

  it('creates a channel (201) and refuses the same name again with store.sql_channel.save_channel.exists.app_error', async () => {
    const r = room();
    const body = JSON.stringify({
      team_id: chat.teamId,
      name: r.name,
      display_name: r.displayName,
      purpose: r.purpose,
      type: 'P',
    });
    const created = await api('/channels', { method: 'POST', body });
    expect(created.status).toBe(201);
    const channel = await created.json();
    expect(channel).toMatchObject({
      name: r.name,
      display_name: r.displayName,
      purpose: r.purpose,
      type: 'P',
      team_id: chat.teamId,
      delete_at: 0,
    });
    expect(channel.id).toMatch(/^[a-z0-9]{26}$/);

    const again = await api('/channels', { method: 'POST', body });
    expect(again.status).toBe(400);
    expect(await again.json()).toMatchObject({
      id: 'store.sql_channel.save_channel.exists.app_error',
      message: 'A channel with that name already exists on the same team.',
      status_code: 400,
    });
  });

  it('refuses names Mattermost would refuse', async () => {
    const res = await api('/channels', {
      method: 'POST',
      body: JSON.stringify({ team_id: chat.teamId, name: 'Not A Name', display_name: 'x', type: 'O' }),
    });
    expect(res.status).toBe(400);
    expect((await res.json()).id).toBe('model.channel.is_valid.name.app_error');
  });
});

describe('the chat client', () => {
  it('ensureChannel creates the room once; a second call finds it', async () => {
    const r = room();
    const first = await client().ensureChannel(r);
    expect(first).toMatchObject({ created: true, restored: false });
    const second = await client().ensureChannel(r);
    expect(second).toEqual({ id: first.id, created: false, restored: false });
    const channel = await client().getChannel(r.name);
    expect(channel).toMatchObject({
      id: first.id,
      name: r.name,
      display_name: r.displayName,
      purpose: r.purpose,
      type: 'P',
      delete_at: 0,
    });
  });

  it('ensureChannel called many times at once ends with one room', async () => {
    const r = room();
    const results = await Promise.all(Array.from({ length: 5 }, () => client().ensureChannel(r)));
    expect(new Set(results.map((x) => x.id)).size).toBe(1);
    expect(results.filter((x) => x.created)).toHaveLength(1);
  });

  it('archives a room (it then shows delete_at) and ensureChannel restores it', async () => {
    const r = room();
    const { id } = await client().ensureChannel(r);
    expect(await client().archiveChannel(r.name)).toBe('archived');
    const archived = await client().getChannel(r.name);
    expect(archived!.delete_at).toBeGreaterThan(0);
    // Mattermost hides archived channels unless include_deleted=true
    expect((await api(`/teams/${chat.teamId}/channels/name/${r.name}`)).status).toBe(404);
    expect(await client().archiveChannel(r.name)).toBe('archived');

    expect(await client().ensureChannel(r)).toEqual({ id, created: false, restored: true });
    expect((await client().getChannel(r.name))!.delete_at).toBe(0);
  });

  it('archiving a room that never existed answers absent; getChannel answers null', async () => {
    expect(await client().archiveChannel('support-nobody-000000')).toBe('absent');
    expect(await client().getChannel('support-nobody-000000')).toBeNull();
  });

  it('says what the chat server answered when it refuses, and reports an unreachable server as a plain error', async () => {
    const wrongToken = createChatClient({ baseUrl: chat.url, token: 'wrong-token-000000000000', teamId: chat.teamId });
    const refused = wrongToken.ensureChannel(room());
    await expect(refused).rejects.toBeInstanceOf(ChatError);
    await expect(refused).rejects.toThrow(/chat server answered 401 .*Invalid or expired session/);

    const badName = client().ensureChannel({ name: 'Bad Name', displayName: 'x', purpose: '' });
    await expect(badName).rejects.toThrow(/chat server answered 400 to creating channel Bad Name: Invalid name\./);

    const down = createChatClient({
      baseUrl: `http://127.0.0.1:${await freePort()}`,
      token: TOKEN,
      teamId: chat.teamId,
    });
    const unreachable = down.ensureChannel(room());
    await expect(unreachable).rejects.toThrow(/chat server unreachable/);
    await expect(unreachable).rejects.not.toBeInstanceOf(ChatError);
  });

  it('keeps its rooms across a restart of the stand-in', async () => {
    const r = room();
    const { id } = await client().ensureChannel(r);
    await client().archiveChannel(r.name);
    await chat.close();
    chat = await startChatStandIn({ port, token: TOKEN, dir });
    const channel = await client().getChannel(r.name);
    expect(channel).toMatchObject({ id, name: r.name });
    expect(channel!.delete_at).toBeGreaterThan(0);
  });
});
