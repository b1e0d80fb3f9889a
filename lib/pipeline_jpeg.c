/*
 * pipeline_jpeg.c - running a pipeline on JPEG bytes, with decode-time
 * DCT scaling and region decoding planned from the first layers.
 */
#include <stdlib.h>

#include "pipeline_exec.h"

struct rfb_jpeg_state {
	int unused;
};

void rfb_pipe_ctx_free_jpeg(rfb_pipe_ctx *ctx)
{
	free(ctx->jpeg);
	ctx->jpeg = NULL;
}
