/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * main() of the coverage build of fuzz_path (run.sh): runs the target once
 * on every file named, or in a directory named, on the command line, as
 * libFuzzer would, without fuzzing; built with -fprofile-instr-generate
 * -fcoverage-mapping, its profile is what llvm-cov reports.
 */

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


static void run_file(const char *path)
{
    uint8_t *data;
    FILE *f;
    long size;

    f = fopen(path, "rb");
    if (f == NULL) {
        perror(path);
        return;
    }
    fseek(f, 0, SEEK_END);
    size = ftell(f);
    fseek(f, 0, SEEK_SET);
    data = malloc(size > 0 ? size : 1);
    if ((data != NULL) && (fread(data, 1, size, f) == (size_t)size)) {
        LLVMFuzzerTestOneInput(data, size);
    }
    free(data);
    fclose(f);
}


int main(int argc, char **argv)
{
    char path[4096];
    struct dirent *e;
    struct stat st;
    unsigned n = 0;
    DIR *d;
    int i;

    LLVMFuzzerInitialize(&argc, &argv);
    for (i = 1; i < argc; ++i) {
        if ((stat(argv[i], &st) == 0) && S_ISDIR(st.st_mode)) {
            d = opendir(argv[i]);
            while ((d != NULL) && ((e = readdir(d)) != NULL)) {
                if (e->d_name[0] == '.') {
                    continue;
                }
                snprintf(path, sizeof(path), "%s/%s", argv[i], e->d_name);
                run_file(path);
                ++n;
            }
            if (d != NULL) {
                closedir(d);
            }
        } else {
            run_file(argv[i]);
            ++n;
        }
    }
    printf("replayed %u inputs\n", n);
    return 0;
}
