/**
 * A large answer given as pieces (control-plane/reply.ts PiecedAnswer) is sent at most 256 KiB per
 * event-loop turn, its bytes as given, whatever falls on a piece's boundary.
 */
import t from 'tap';
import { PiecedAnswer } from '../control-plane/reply.ts';

t.test('an answer of megabytes goes out in pieces, a turn each, byte for byte', async (t) => {
  const value = Buffer.from('é😀€"'.repeat(300_000));
  const pieces = [Buffer.from('{"object":{"value":"'), value, Buffer.from('"}}')];
  const answer = new PiecedAnswer(pieces);
  t.equal(answer.byteLength, pieces[0]!.length + value.length + pieces[2]!.length);
  const sizes: number[] = [];
  let turns = 0;
  let turning = true;
  const tick = () => {
    turns++;
    if (turning) setImmediate(tick);
  };
  setImmediate(tick);
  const received: Buffer[] = [];
  let turnsAtChunk = -1;
  let eachInATurnOfItsOwn = true;
  for await (const chunk of answer) {
    if (turns === turnsAtChunk) eachInATurnOfItsOwn = false;
    turnsAtChunk = turns;
    sizes.push((chunk as Buffer).length);
    received.push(chunk as Buffer);
  }
  turning = false;
  t.ok(Buffer.concat(received).equals(Buffer.concat(pieces)), 'the bytes as given');
  t.ok(Math.max(...sizes) <= 256 * 1024, 'no piece over 256 KiB');
  t.ok(sizes.length >= Math.ceil(value.length / (256 * 1024)), `${sizes.length} pieces`);
  t.ok(eachInATurnOfItsOwn, 'each piece in a turn of its own');
  t.equal(answer.text(), Buffer.concat(pieces).toString('utf8'));
});
