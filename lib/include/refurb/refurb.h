/*
 * refurb.h - librefurb, the library under the refurb programs.
 * Includes every public header.
 */
#ifndef REFURB_REFURB_H
#define REFURB_REFURB_H

#define RFB_VERSION "0.1.0"

#include "refurb/bytes.h"
#include "refurb/checksum.h"
#include "refurb/error.h"
#include "refurb/image.h"
#include "refurb/io.h"
#include "refurb/pipeline.h"
#include "refurb/progress.h"
#include "refurb/resize.h"
#include "refurb/rng.h"
#include "refurb/sheet.h"
#include "refurb/tensor.h"
#include "refurb/transform.h"

#endif
