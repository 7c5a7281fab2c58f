/*
 * main: the kurad entry point. Parses the command line and hands over to
 * server_run(); everything else lives in the modules so tests can link it.
 */
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "server.h"
#include "settings.h"

int
main(int argc, char **argv)
{
    static struct settings settings;
    char err[1024];

    settings_init(&settings);
    switch (settings_parse(&settings, argc, argv, err, sizeof(err))) {
    case SETTINGS_HELP:
        settings_usage(stdout, "kurad");
        return 0;
    case SETTINGS_VERSION:
        printf("kurad %s\n", PACKAGE_VERSION);
        return 0;
    case SETTINGS_ERROR:
        /* The reason alone: 45 lines of usage after it would bury it. */
        if (strstr(err, "-h)") != NULL) {
            fprintf(stderr, "kurad: %s\n", err);
        } else {
            fprintf(stderr, "kurad: %s (see kurad -h)\n", err);
        }
        return 2;
    case SETTINGS_OK:
        break;
    }
    return server_run(&settings);
}
