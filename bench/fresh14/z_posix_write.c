/* Small records to a file per process: argv[2] records of argv[3] bytes each rank, an fsync after every
   argv[4]-th (0: none). */
#include <mpi.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank; MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int n = atoi(argv[2]), size = atoi(argv[3]), every = atoi(argv[4]);
    char path[512]; snprintf(path, sizeof path, "%s.%d", argv[1], rank);
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    char *buf = malloc(size); memset(buf, 'a' + rank, size);
    for (int i = 0; i < n; i++) {
        if (write(fd, buf, size) != size) return 1;
        if (every && i % every == every - 1) fsync(fd);
    }
    close(fd);
    free(buf);
    MPI_Finalize();
    return 0;
}
