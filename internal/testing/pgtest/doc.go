// Package pgtest runs a real PostgreSQL server for tests and the load
// harness: initdb into a directory of its own, the postgres binary on a
// free loopback port with trust authentication, and stop, crash and
// restart on the same data. It needs the PostgreSQL server binaries
// (initdb, postgres, pg_isready); Binaries finds them.
//
// PostgreSQL refuses to run as root, so when the caller is root the server
// runs as an unprivileged user (nobody by default) that owns the data
// directory.
//
// Typical use:
//
//	pg, err := pgtest.Start(ctx, pgtest.Options{})
//	if err != nil { ... }
//	defer pg.Close()
//	dsn := pg.Addr() // host:port; user pg.User(), no password
package pgtest
