/*
 * fdlimit.c - the open-file limit against what a run needs (see
 * fdlimit.h).
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include "refurb/fdlimit.h"

uint32_t rfb_fd_count_open(uint64_t below)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	uint32_t n = 0;
	int self;

	if (!d) {  /* no /proc (or no descriptor left): ask one by one */
		for (int fd = 0; fd < 4096 && (uint64_t)fd < below; fd++)
			n += fcntl(fd, F_GETFD) != -1;
		return n;
	}
	self = dirfd(d);
	while ((e = readdir(d))) {
		char *end;
		unsigned long fd = strtoul(e->d_name, &end, 10);
		if (e->d_name[0] != '.' && !*end && (int)fd != self && fd < below)
			n++;
	}
	closedir(d);
	return n;
}

static uint64_t lim(rlim_t v)
{
	return v == RLIM_INFINITY ? UINT64_MAX : (uint64_t)v;
}

int rfb_fd_budget_check(uint32_t need, uint32_t want, const char *what,
			struct rfb_fd_budget *b, rfb_err *err)
{
	struct rlimit rl;
	uint64_t full;

	b->raised = 0;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		rl.rlim_cur = rl.rlim_max = RLIM_INFINITY;
	b->limit = lim(rl.rlim_cur);
	b->hard = lim(rl.rlim_max);
	/* the limit bounds descriptor numbers: those open above it (a
	 * shell's 255) take no room under it */
	b->open = rfb_fd_count_open(b->limit);
	full = (uint64_t)b->open + need + want;
	if (b->limit < full && b->hard > b->limit) {
		struct rlimit up = rl;
		up.rlim_cur = (rlim_t)(b->hard < full ? b->hard : full);
		if (setrlimit(RLIMIT_NOFILE, &up) == 0) {
			b->limit = (uint64_t)up.rlim_cur;
			b->raised = 1;
			b->open = rfb_fd_count_open(b->limit);
		}
	}
	if (b->limit < (uint64_t)b->open + need) {
		b->spare = 0;
		return rfb_err_set(err, RFB_ERESOURCE, NULL,
				   "the open-file limit is %llu, %u are open and "
				   "%s need %u more: raise it (ulimit -n %llu or "
				   "more; refurb(7), RESOURCE LIMITS)",
				   (unsigned long long)b->limit, b->open, what,
				   need, (unsigned long long)(full < 1024 ? 1024
							      : full));
	}
	b->spare = b->limit - b->open - need > UINT32_MAX ? UINT32_MAX
		: (uint32_t)(b->limit - b->open - need);
	return 0;
}
