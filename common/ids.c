/* ids.c — random and time-ordered UUIDs (see ids.h). */
#include "common/ids.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/random.h"
#include "common/time.h"

static void fl_uuid_text(const unsigned char *b, char *out) {
  snprintf(out, FL_ID_LEN, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
           b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
           b[14], b[15]);
}

void fl_uuid(char *out) {
  unsigned char b[16];
  fl_random_bytes(b, sizeof b);
  b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* version 4 */
  b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
  fl_uuid_text(b, out);
}

void fl_uuid_msg(char *out) {
  unsigned char b[16];
  fl_random_bytes(b, sizeof b);
  uint64_t ms = (uint64_t)fl_now_ms();
  for (int i = 0; i < 6; i++)
    b[i] = (unsigned char)(ms >> (40 - 8 * i));
  b[6] = (unsigned char)((b[6] & 0x0f) | 0x70); /* version 7 */
  b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
  fl_uuid_text(b, out);
}

int fl_is_uuid(const char *s) {
  if (!s || strlen(s) != 36)
    return 0;
  for (int i = 0; i < 36; i++) {
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (s[i] != '-')
        return 0;
    } else if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f') ||
                 (s[i] >= 'A' && s[i] <= 'F'))) {
      return 0;
    }
  }
  return 1;
}
