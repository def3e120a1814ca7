// Command image builds the controller's OCI image without a Docker daemon
// (make image), and prints what an image tarball holds (make image-inspect).
//
//	image build -binary bin/linux_amd64/wva -version 0.1.0 -tag ghcr.io/llm-d-incubation/wva:0.1.0 -out bin/wva-image-0.1.0.tar [-push]
//	image inspect bin/wva-image-0.1.0.tar
//
// The image is built from scratch: one layer holding /wva, a passwd and a
// group file naming the non-root user 65532, CA certificates, /tmp and the
// user's home. Every timestamp in it is -created (SOURCE_DATE_EPOCH, or the
// last commit's time), so that the same binary and certificates give the
// same digest. It is written as a tarball that docker load and podman load
// accept, and pushed with the credentials of ~/.docker/config.json (or
// $DOCKER_CONFIG) when -push is given.
package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const (
	uid = 65532
	gid = 65532
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: image build|inspect …")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "build":
		err = build(os.Args[2:])
	case "inspect":
		err = inspect(os.Args[2:])
	default:
		err = fmt.Errorf("unknown subcommand %q (build, inspect)", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

type buildOptions struct {
	binary, arch, version, revision, source, tag, out, caCerts string
	created                                                    time.Time
	push                                                       bool
}

func build(args []string) error {
	o, ref, err := parseBuild(args)
	if err != nil {
		return err
	}
	img, err := image(o)
	if err != nil {
		return err
	}
	return deliver(o, ref, img)
}

// parseBuild reads build's flags.
func parseBuild(args []string) (buildOptions, name.Tag, error) {
	fs := flag.NewFlagSet("build", flag.ContinueOnError)
	var o buildOptions
	var created string
	fs.StringVar(&o.binary, "binary", "", "the static linux binary to put at /wva")
	fs.StringVar(&o.arch, "arch", "amd64", "the binary's GOARCH (the image's platform is linux/ARCH)")
	fs.StringVar(&o.version, "version", "", "the release (org.opencontainers.image.version)")
	fs.StringVar(&o.revision, "revision", "", "the commit (org.opencontainers.image.revision)")
	fs.StringVar(&o.source, "source", "https://github.com/llm-d-incubation/wva", "org.opencontainers.image.source")
	fs.StringVar(&created, "created", os.Getenv("SOURCE_DATE_EPOCH"), "build time, in seconds since the epoch (every timestamp in the image)")
	fs.StringVar(&o.caCerts, "ca-certs", "/etc/ssl/certs/ca-certificates.crt", "CA bundle copied to /etc/ssl/certs/ca-certificates.crt; empty for none")
	fs.StringVar(&o.tag, "tag", "", "the image's reference, e.g. ghcr.io/llm-d-incubation/wva:0.1.0 (the tarball's tag; the push target with -push)")
	fs.StringVar(&o.out, "out", "", "write the image tarball here (docker load / podman load)")
	fs.BoolVar(&o.push, "push", false, "push the image to -tag")
	if err := fs.Parse(args); err != nil {
		return o, name.Tag{}, err
	}
	if o.binary == "" || o.version == "" || o.tag == "" {
		return o, name.Tag{}, errors.New("-binary, -version and -tag are required")
	}
	if created == "" {
		return o, name.Tag{}, errors.New("-created (or SOURCE_DATE_EPOCH) is required: the image must not depend on when it was built")
	}
	sec, err := strconv.ParseInt(created, 10, 64)
	if err != nil {
		return o, name.Tag{}, fmt.Errorf("-created %q: not a number of seconds", created)
	}
	o.created = time.Unix(sec, 0).UTC()
	ref, err := name.NewTag(o.tag, name.StrictValidation)
	if err != nil {
		return o, name.Tag{}, fmt.Errorf("-tag: %w", err)
	}
	return o, ref, nil
}

// deliver prints the image's digests and size, writes its tarball and
// pushes it, as the options ask.
func deliver(o buildOptions, ref name.Tag, img v1.Image) error {
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	configDigest, err := img.ConfigName()
	if err != nil {
		return err
	}
	size, err := compressedSize(img)
	if err != nil {
		return err
	}
	fmt.Printf("image %s\n  digest %s (manifest, as pushed)\n  id     %s (config, as docker/podman load name it)\n  size   %d bytes compressed\n",
		ref, digest, configDigest, size)
	if o.out != "" {
		if err := tarball.WriteToFile(o.out, ref, img); err != nil {
			return fmt.Errorf("write %s: %w", o.out, err)
		}
		fmt.Printf("  wrote  %s\n", o.out)
	}
	if o.push {
		if err := remote.Write(ref, img, remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
			return fmt.Errorf("push %s: %w", ref, err)
		}
		fmt.Printf("  pushed %s@%s\n", ref.Context(), digest)
	}
	return nil
}

// image assembles the image from scratch.
func image(o buildOptions) (v1.Image, error) {
	bin, err := os.ReadFile(o.binary)
	if err != nil {
		return nil, err
	}
	var certs []byte
	if o.caCerts != "" {
		if certs, err = os.ReadFile(o.caCerts); err != nil {
			return nil, fmt.Errorf("CA certificates (-ca-certs \"\" for none): %w", err)
		}
	}
	layerTar, err := rootfs(bin, certs, o.created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
	if err != nil {
		return nil, err
	}

	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	created := v1.Time{Time: o.created}
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History: v1.History{
			Created:   created,
			CreatedBy: "make image (hack/image): /wva, /etc/passwd, /etc/group, CA certificates",
		},
	})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS = "linux"
	cf.Architecture = o.arch
	cf.Created = created
	cf.Config = v1.Config{
		Entrypoint: []string{"/wva"},
		Cmd:        []string{"controller"},
		User:       fmt.Sprintf("%d:%d", uid, gid),
		WorkingDir: "/",
		Labels: map[string]string{
			"org.opencontainers.image.title":       "wva",
			"org.opencontainers.image.description": "WVA, the SLO-driven autoscaler for LLM inference servers (controller)",
			"org.opencontainers.image.source":      o.source,
			"org.opencontainers.image.version":     o.version,
			"org.opencontainers.image.revision":    o.revision,
			"org.opencontainers.image.created":     o.created.Format(time.RFC3339),
			"org.opencontainers.image.licenses":    "Apache-2.0",
		},
	}
	return mutate.ConfigFile(img, cf)
}

// rootfs returns the layer's uncompressed tar. Entries are in a fixed order
// with fixed owners and times, so equal inputs give equal bytes.
func rootfs(bin, certs []byte, mtime time.Time) ([]byte, error) {
	type entry struct {
		name     string
		mode     int64
		uid, gid int
		body     []byte
	}
	passwd := "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
		"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group := "root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n"
	entries := []entry{
		{name: "etc/", mode: 0o755},
		{name: "etc/group", mode: 0o644, body: []byte(group)},
		{name: "etc/passwd", mode: 0o644, body: []byte(passwd)},
	}
	if certs != nil {
		entries = append(entries,
			entry{name: "etc/ssl/", mode: 0o755},
			entry{name: "etc/ssl/certs/", mode: 0o755},
			entry{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, body: certs})
	}
	entries = append(entries,
		entry{name: "home/", mode: 0o755},
		entry{name: "home/nonroot/", mode: 0o700, uid: uid, gid: gid},
		entry{name: "tmp/", mode: 0o1777},
		entry{name: "wva", mode: 0o755, uid: uid, gid: gid, body: bin})

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{
			Name:    e.name,
			Mode:    e.mode,
			Uid:     e.uid,
			Gid:     e.gid,
			ModTime: mtime,
		}
		if strings.HasSuffix(e.name, "/") {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func compressedSize(img v1.Image) (int64, error) {
	m, err := img.Manifest()
	if err != nil {
		return 0, err
	}
	total := m.Config.Size
	for _, l := range m.Layers {
		total += l.Size
	}
	return total, nil
}

// inspect prints an image tarball's tags, config and files.
func inspect(args []string) error {
	if len(args) != 1 {
		return errors.New("usage: image inspect IMAGE.tar")
	}
	path := args[0]
	m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(path) })
	if err != nil {
		return err
	}
	for _, d := range m {
		fmt.Printf("tags    %s\n", strings.Join(d.RepoTags, " "))
	}
	img, err := tarball.ImageFromPath(path, nil)
	if err != nil {
		return err
	}
	id, err := img.ConfigName()
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	c := cf.Config
	fmt.Printf("id      %s\n", id)
	fmt.Printf("platform %s/%s\ncreated %s\n", cf.OS, cf.Architecture, cf.Created.UTC().Format(time.RFC3339))
	fmt.Printf("user    %s\nentrypoint %q\ncmd     %q\nworkdir %s\nenv     %q\n", c.User, c.Entrypoint, c.Cmd, c.WorkingDir, c.Env)
	keys := make([]string, 0, len(c.Labels))
	for k := range c.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Printf("label   %s=%s\n", k, c.Labels[k])
	}
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	for i, l := range layers {
		if err := printLayer(i, l); err != nil {
			return err
		}
	}
	return nil
}

// printLayer prints a layer's digest, size and files.
func printLayer(i int, l v1.Layer) error {
	d, err := l.Digest()
	if err != nil {
		return err
	}
	sz, err := l.Size()
	if err != nil {
		return err
	}
	fmt.Printf("layer %d %s (%d bytes compressed)\n", i, d, sz)
	rc, err := l.Uncompressed()
	if err != nil {
		return err
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		fmt.Printf("  %c %04o %5d:%-5d %9d %s /%s\n", typeChar(h.Typeflag), h.Mode, h.Uid, h.Gid, h.Size,
			h.ModTime.UTC().Format(time.RFC3339), h.Name)
	}
}

func typeChar(t byte) byte {
	switch t {
	case tar.TypeDir:
		return 'd'
	case tar.TypeReg:
		return '-'
	case tar.TypeSymlink:
		return 'l'
	}
	return '?'
}
