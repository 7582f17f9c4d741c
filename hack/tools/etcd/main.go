// Command etcd is etcd's own server main, built from the Go module proxy
// because no etcd release binary can be downloaded on the build machines.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
