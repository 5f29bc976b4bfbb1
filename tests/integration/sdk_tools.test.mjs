// sdk_tools.test.mjs — the official MCP SDK sees every fleet tool with an
// input and output schema, and each call returns structuredContent equal to
// the JSON in its text content. Listing the tools first makes the SDK check
// every later structuredContent against the tool's outputSchema itself.

import assert from 'node:assert/strict';
import { fleetTest, callTool, entity, selfGid } from './harness.mjs';

const TOOLS = ['fleet_list', 'fleet_send', 'fleet_reply', 'fleet_poll', 'fleet_broadcast'];

fleetTest('tools are listed with input and output schemas', async (f) => {
  await f.startFleetd();
  const sam = await f.mcpClient('sam');

  const server = sam.getServerVersion();
  assert.equal(server.name, 'fleetd');
  assert.equal(typeof server.version, 'string');
  const caps = sam.getServerCapabilities();
  assert.ok(caps.tools, 'tools capability');
  assert.ok(caps.logging, 'logging capability');

  const { tools } = await sam.listTools();
  const byName = new Map(tools.map((t) => [t.name, t]));
  for (const name of TOOLS) {
    const t = byName.get(name);
    assert.ok(t, `${name} is listed (got ${[...byName.keys()].join(', ')})`);
    assert.equal(typeof t.description, 'string', `${name} has a description`);
    assert.equal(t.inputSchema?.type, 'object', `${name} inputSchema.type`);
    assert.ok(t.outputSchema, `${name} has an outputSchema`);
    assert.equal(t.outputSchema.type, 'object', `${name} outputSchema.type`);
  }
  const sendProps = Object.keys(byName.get('fleet_send').inputSchema.properties || {});
  for (const p of ['to', 'content', 'wait_s']) assert.ok(sendProps.includes(p), `fleet_send takes ${p}`);
  await f.closeClient(sam);
});

fleetTest('every tool answers with structuredContent equal to its text', async (f) => {
  await f.startFleetd();
  const sam = await f.mcpClient('sam', { role: 'orchestrator', groups: ['crew'] });
  const tia = await f.mcpClient('tia', { role: 'worker', groups: 'crew,night' });
  const uma = await f.mcpClient('uma', { role: 'worker' });
  await sam.listTools();
  await tia.listTools();
  await uma.listTools();

  // fleet_list
  const list = await callTool(sam, 'fleet_list', {});
  assert.equal(typeof list.host, 'string');
  const samGid = selfGid(list);
  assert.equal(typeof samGid, 'string');
  const samE = entity(list, 'sam');
  assert.ok(samE, JSON.stringify(list));
  assert.equal(samE.gid, samGid);
  assert.equal(samE.self, true);
  assert.equal(samE.status, 'online');
  assert.equal(samE.role, 'orchestrator');
  assert.deepEqual(samE.groups, ['crew']);
  assert.equal(samE.host, list.host);
  const tiaE = entity(list, 'tia');
  assert.ok(tiaE, JSON.stringify(list));
  assert.equal(tiaE.self, false);
  assert.deepEqual(tiaE.groups.slice().sort(), ['crew', 'night']);
  assert.equal(typeof tiaE.held, 'number');

  // fleet_send (by name) and fleet_poll
  const sent = await callTool(sam, 'fleet_send', { to: 'tia', content: 'hello tia' });
  assert.equal(sent.status, 'sent');
  assert.equal(sent.to.gid, tiaE.gid);
  assert.equal(sent.to.name, 'tia');
  assert.equal(typeof sent.msgId, 'string');
  assert.equal(typeof sent.traceId, 'string');

  // fleet_send by gid
  const sent2 = await callTool(sam, 'fleet_send', { to: tiaE.gid, content: 'hello again' });
  assert.equal(sent2.to.name, 'tia');
  assert.notEqual(sent2.msgId, sent.msgId);

  const poll1 = await callTool(tia, 'fleet_poll', { max: 1 });
  assert.equal(poll1.messages.length, 1);
  assert.equal(poll1.messages[0].content, 'hello tia', 'held messages come out in order');
  assert.equal(poll1.remaining, 1);
  const poll2 = await callTool(tia, 'fleet_poll', { wait_s: 5 });
  assert.equal(poll2.messages.length, 1);
  assert.equal(poll2.messages[0].content, 'hello again');
  assert.equal(poll2.messages[0].to.gid ?? poll2.messages[0].to, tiaE.gid);
  assert.equal(poll2.remaining, 0);

  // fleet_reply
  const rep = await callTool(tia, 'fleet_reply', { to: 'sam', content: 'hi sam', inReplyTo: sent.msgId });
  assert.ok(['delivered', 'held'].includes(rep.status), JSON.stringify(rep));
  assert.equal(typeof rep.msgId, 'string');
  const rep2 = await callTool(tia, 'fleet_reply', { to: samGid, content: 'no thread' });
  assert.ok(['delivered', 'held'].includes(rep2.status), JSON.stringify(rep2));
  const samPoll = await callTool(sam, 'fleet_poll', { wait_s: 5 });
  assert.ok(samPoll.messages.length >= 1);
  assert.equal(samPoll.messages[0].kind, 'REPLY');
  assert.equal(samPoll.messages[0].inReplyTo, sent.msgId);

  // fleet_broadcast: everyone but the sender; a group; an unknown group.
  const all = await callTool(sam, 'fleet_broadcast', { content: 'to all' });
  assert.equal(all.recipients, 2, `tia and uma, not sam: ${JSON.stringify(all)}`);
  assert.equal(typeof all.msgId, 'string');
  const crew = await callTool(sam, 'fleet_broadcast', { content: 'to crew', group: 'crew' });
  assert.equal(crew.recipients, 1, `only tia (sam is the sender): ${JSON.stringify(crew)}`);
  assert.equal(crew.group, 'crew');
  const none = await callTool(sam, 'fleet_broadcast', { content: 'to nobody', group: 'no-such-group' });
  assert.equal(none.recipients, 0, 'an unknown group is legal silence');

  // poll with a from filter
  const fromSam = await callTool(tia, 'fleet_poll', { from: 'sam', wait_s: 5 });
  assert.deepEqual(
    fromSam.messages.map((m) => m.content),
    ['to all', 'to crew']
  );
  const umaPoll = await callTool(uma, 'fleet_poll', { wait_s: 5 });
  assert.deepEqual(
    umaPoll.messages.map((m) => m.content),
    ['to all']
  );
  const samOwn = await callTool(sam, 'fleet_poll', {});
  assert.ok(
    !samOwn.messages.some((m) => m.content.startsWith('to ')),
    'the sender does not get its own broadcast'
  );
});
