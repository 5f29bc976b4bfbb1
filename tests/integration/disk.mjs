// disk.mjs — a small disk that fills, for the tests of a full disk: a tmpfs
// mounted in the test's own dir (root only), and a file that takes every
// byte left on it.

import { spawnSync } from 'node:child_process';
import { closeSync, openSync, writeSync } from 'node:fs';

/** Mounts a tmpfs of size (e.g. '4m') at dir; returns null, or why it cannot. */
export function mountTmpfs(dir, size) {
  if (process.getuid?.() !== 0) return 'not root';
  const r = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir], { encoding: 'utf8' });
  return r.status === 0 ? null : `mount failed: ${(r.stderr || r.error?.message || '').trim()}`;
}

/** Unmounts dir (lazily: a process may still hold a file there). */
export function unmountTmpfs(dir) {
  spawnSync('umount', ['-l', dir]);
}

/**
 * Writes zeros to file until the disk is full, in large chunks and then in
 * small ones until not one more goes in; returns the bytes written.
 */
export function fill(file) {
  const fd = openSync(file, 'w');
  let n = 0;
  try {
    for (const size of [64 * 1024, 512]) {
      const chunk = Buffer.alloc(size);
      for (;;) {
        try {
          n += writeSync(fd, chunk);
        } catch (e) {
          if (e.code !== 'ENOSPC') throw e;
          break;
        }
      }
    }
    return n;
  } finally {
    closeSync(fd);
  }
}
