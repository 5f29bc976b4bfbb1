/* fleetctl_systemd.h — `fleetctl systemd`: the systemd user unit that runs
 * the fleetd next to this fleetctl, and the lines that enable it. */
#ifndef FL_FLEETCTL_SYSTEMD_H
#define FL_FLEETCTL_SYSTEMD_H

/* Prints the unit (clients/fleetd.service as built in, its ExecStart set to
 * the fleetd beside this binary when there is one) on stdout, and how to
 * install and enable it on stderr. Needs no fleetd. Returns an exit status
 * (FL_EXIT_OK). */
int fl_ctl_systemd(void);

#endif
