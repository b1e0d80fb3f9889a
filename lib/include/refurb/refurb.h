/*
 * refurb.h - librefurb, the library under the refurb programs.
 * Includes exactly the installed headers (tests/install.bats checks it);
 * refurb(3) lists their functions by group.  The headers whose comment
 * says "Internal to librefurb" (aio.h, annotate.h, handover.h, pool.h:
 * the stages' batch reader, plan annotation, shared-memory handover and
 * thread pool) are the library's own: they sit beside the others but are
 * not installed, and this header does not include them.  Every header can
 * be included alone, from C or C++ (extern "C").
 */
#ifndef REFURB_REFURB_H
#define REFURB_REFURB_H

#define RFB_VERSION "0.1.0"

#include "refurb/advise.h"
#include "refurb/augment.h"
#include "refurb/augmix.h"
#include "refurb/bytes.h"
#include "refurb/cache.h"
#include "refurb/checksum.h"
#include "refurb/costs.h"
#include "refurb/decode.h"
#include "refurb/encode.h"
#include "refurb/enum.h"
#include "refurb/error.h"
#include "refurb/evict.h"
#include "refurb/fdlimit.h"
#include "refurb/filters.h"
#include "refurb/final.h"
#include "refurb/format.h"
#include "refurb/image.h"
#include "refurb/index.h"
#include "refurb/io.h"
#include "refurb/jpeg.h"
#include "refurb/ops.h"
#include "refurb/partial.h"
#include "refurb/pipeline.h"
#include "refurb/plan.h"
#include "refurb/png.h"
#include "refurb/progress.h"
#include "refurb/record.h"
#include "refurb/resize.h"
#include "refurb/rng.h"
#include "refurb/scan.h"
#include "refurb/sheet.h"
#include "refurb/source.h"
#include "refurb/stream.h"
#include "refurb/tensor.h"
#include "refurb/transform.h"

#endif
