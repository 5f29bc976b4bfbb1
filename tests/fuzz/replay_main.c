/* replay_main.c — runs a fuzz target without libFuzzer: every file in the
 * corpus directories given on the command line, then a fixed number of
 * deterministic mutations of them (byte flips, truncations, splices). A
 * crash, a sanitizer report or a leak fails the run; the seed makes any
 * failure reproducible. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_MAX_INPUTS 256
#define FZ_MAX_INPUT (64 * 1024)
#define MUTATIONS 20000

static uint8_t *inputs[FZ_MAX_INPUTS];
static size_t sizes[FZ_MAX_INPUTS], ninputs;

static uint64_t rng = 0x9e3779b97f4a7c15ull; /* fixed seed: reproducible */
static uint64_t next(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static void load_dir(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *e;
  if (!d) {
    fprintf(stderr, "replay: cannot open %s\n", dir);
    exit(2);
  }
  while ((e = readdir(d)) && ninputs < FZ_MAX_INPUTS) {
    if (e->d_name[0] == '.')
      continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    FILE *f = fopen(path, "rb");
    if (!f)
      continue;
    uint8_t *buf = malloc(FZ_MAX_INPUT);
    size_t n = fread(buf, 1, FZ_MAX_INPUT, f);
    fclose(f);
    inputs[ninputs] = buf;
    sizes[ninputs++] = n;
  }
  closedir(d);
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    load_dir(argv[i]);
  if (ninputs == 0) {
    fprintf(stderr, "replay: no corpus\n");
    return 2;
  }
  for (size_t i = 0; i < ninputs; i++)
    LLVMFuzzerTestOneInput(inputs[i], sizes[i]);
  uint8_t *buf = malloc(2 * FZ_MAX_INPUT);
  for (int m = 0; m < MUTATIONS; m++) {
    size_t a = next() % ninputs, b = next() % ninputs;
    size_t n = sizes[a];
    memcpy(buf, inputs[a], n);
    switch (next() % 4) {
    case 0: /* flip some bytes */
      for (int k = 0; k < 4 && n; k++)
        buf[next() % n] ^= (uint8_t)(1u << (next() % 8));
      break;
    case 1: /* truncate */
      n = n ? next() % n : 0;
      break;
    case 2: /* splice the tail of another input */
      if (sizes[b]) {
        size_t at = n ? next() % n : 0, from = next() % sizes[b];
        memcpy(buf + at, inputs[b] + from, sizes[b] - from);
        n = at + sizes[b] - from;
      }
      break;
    default: /* insert a random byte */
      if (n < FZ_MAX_INPUT) {
        size_t at = n ? next() % n : 0;
        memmove(buf + at + 1, buf + at, n - at);
        buf[at] = (uint8_t)next();
        n++;
      }
    }
    LLVMFuzzerTestOneInput(buf, n);
  }
  free(buf);
  for (size_t i = 0; i < ninputs; i++)
    free(inputs[i]);
  printf("replay: %zu corpus inputs and %d mutations ran clean\n", ninputs, MUTATIONS);
  return 0;
}
