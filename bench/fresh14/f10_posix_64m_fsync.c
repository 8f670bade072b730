/* Large checkpoints: each rank writes 4 requests of 64 MiB to its own file (256 MiB), fsync after each. */
#include <mpi.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#define REC (64L << 20)
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank; MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char path[512]; snprintf(path, sizeof path, "%s.%d", argv[1], rank);
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    char *buf = malloc(REC); memset(buf, 'a' + rank, REC);
    for (int i = 0; i < 4; i++) {
        if (write(fd, buf, REC) != REC) return 1;
        fsync(fd);
    }
    close(fd);
    free(buf);
    MPI_Finalize();
    return 0;
}
