/* SPDX-License-Identifier: MIT */
/*
 * The stand-alone replay driver of the fuzz targets (no libFuzzer): a main()
 * that runs LLVMFuzzerTestOneInput() over the files and directories named
 * on the command line, directories in name order.  Included at the end of
 * each target's file, which provides LLVMFuzzerTestOneInput() and the
 * headers (dirent.h, errno.h, stdio.h, stdlib.h, string.h, sys/stat.h).
 */
#ifndef FUZZ_LIBFUZZER
static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	static uint8_t buf[1 << 20];
	size_t n;

	if (!f) {
		perror(path);
		return -1;
	}
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	LLVMFuzzerTestOneInput(buf, n);
	return 0;
}

static int cmp_str(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

static int replay_path(const char *path, unsigned *count)
{
	struct stat st;
	DIR *dir;
	struct dirent *de;
	char **names = NULL;
	size_t nr = 0, cap = 0;
	int err = 0;

	if (stat(path, &st) != 0) {
		perror(path);
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		(*count)++;
		return replay_file(path);
	}
	dir = opendir(path);
	if (!dir) {
		perror(path);
		return -1;
	}
	while ((de = readdir(dir)) != NULL) {
		size_t len;

		if (de->d_name[0] == '.')
			continue;
		if (nr == cap) {
			char **nn = realloc(names, (cap = cap ? 2 * cap : 64) * sizeof(*names));

			if (!nn)
				abort();
			names = nn;
		}
		len = strlen(path) + strlen(de->d_name) + 2;
		names[nr] = malloc(len);
		if (!names[nr])
			abort();
		snprintf(names[nr++], len, "%s/%s", path, de->d_name);
	}
	closedir(dir);
	if (nr)
		qsort(names, nr, sizeof(*names), cmp_str);	/* a stable order */
	for (size_t i = 0; i < nr; i++) {
		if (replay_path(names[i], count) != 0)
			err = -1;	/* go on: report it at the end */
		free(names[i]);
	}
	free(names);
	return err;
}

int main(int argc, char **argv)
{
	unsigned count = 0;
	int err = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
		return 2;
	}
	for (int i = 1; i < argc; i++)
		if (replay_path(argv[i], &count) != 0)
			err = 1;
	printf("replayed %u inputs\n", count);
	if (!count)
		err = 1;	/* an empty corpus is a broken test */
	return err;
}
#endif
