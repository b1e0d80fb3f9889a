/*
 * fdlimit.c - the open-file limit against what a run needs (see
 * fdlimit.h).
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

#include "refurb/fdlimit.h"

uint32_t rfb_fd_count_open(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	uint32_t n = 0;

	if (!d) {  /* no /proc: ask the first descriptors one by one */
		for (int fd = 0; fd < 1024; fd++)
			n += fcntl(fd, F_GETFD) != -1;
		return n;
	}
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1;  /* the directory's own descriptor */
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

	b->open = rfb_fd_count_open();
	b->raised = 0;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		rl.rlim_cur = rl.rlim_max = RLIM_INFINITY;
	b->limit = lim(rl.rlim_cur);
	b->hard = lim(rl.rlim_max);
	full = (uint64_t)b->open + need + want;
	if (b->limit < full && b->hard > b->limit) {
		struct rlimit up = rl;
		up.rlim_cur = (rlim_t)(b->hard < full ? b->hard : full);
		if (setrlimit(RLIMIT_NOFILE, &up) == 0) {
			b->limit = (uint64_t)up.rlim_cur;
			b->raised = 1;
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
