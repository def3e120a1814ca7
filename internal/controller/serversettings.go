// Server settings read from the workload: the batch size, token budget and
// accelerators per replica a variant's pod template gives its server, so
// that a VariantAutoscaling need not repeat them. Free of API calls;
// tested in serversettings_test.go.

package controller

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	wvav1 "github.com/llm-d-incubation/wva/api/v1alpha1"
	"github.com/llm-d-incubation/wva/internal/engine"
)

// acceleratorResources are the extended resources that count a replica's
// accelerators (device plugins' names).
var acceleratorResources = []corev1.ResourceName{
	"nvidia.com/gpu", "amd.com/gpu", "gpu.intel.com/i915", "gpu.intel.com/xe", "habana.ai/gaudi",
	"google.com/tpu", "aws.amazon.com/neuron", "aws.amazon.com/neuroncore",
}

// serverFlags map the server arguments WVA reads (vLLM's, and SGLang's
// names for the same settings) to the setting they give. Underscores are
// read as dashes, as vLLM's argument parser does.
var serverFlags = map[string]string{
	"--max-num-seqs": settingBatch, "--max-running-requests": settingBatch,
	"--max-num-batched-tokens": settingTokens, "--max-prefill-tokens": settingTokens,
	"--tensor-parallel-size": settingTP, "-tp": settingTP, "--tp-size": settingTP, "--tp": settingTP,
	"--pipeline-parallel-size": settingPP, "-pp": settingPP, "--pp-size": settingPP,
	"--data-parallel-size-local": settingDPLocal, "-dpl": settingDPLocal,
}

// The settings, as named in messages.
const (
	settingBatch   = "maxBatchSize"
	settingTokens  = "maxBatchTokens"
	settingTP      = "tensor parallelism"
	settingPP      = "pipeline parallelism"
	settingDPLocal = "local data parallelism"
	settingAccs    = "acceleratorsPerReplica"
	// maxSetting bounds a value read from a pod template.
	maxSetting = 1 << 24
)

// serverSettings are what a pod template says of its server: each setting
// (0: not said) and where it was read.
type serverSettings struct {
	batch, tokens, accelerators int
	from                        map[string]string // setting → "container vllm, --max-num-seqs"
	problems                    []string
}

// readServerSettings reads a pod template: the server's arguments in
// each container's command and args (a shell's -c script split into
// words), and the accelerators its containers' limits (else requests)
// ask for. Without accelerator resources, the parallel sizes' product.
// Values that are not whole numbers from 1 to 2^24 are problems, not used.
func readServerSettings(tpl *corev1.PodTemplateSpec) serverSettings {
	ss := serverSettings{from: map[string]string{}}
	if tpl == nil {
		return ss
	}
	vals := map[string]int{}
	for _, c := range tpl.Spec.Containers {
		ss.readArgs(c.Name, words(append(append([]string(nil), c.Command...), c.Args...)), vals)
		if n := acceleratorsOf(c); n > 0 {
			ss.accelerators += n
			ss.from[settingAccs] = joinFrom(ss.from[settingAccs], fmt.Sprintf("container %s's accelerator resources", c.Name))
		}
	}
	ss.batch, ss.tokens = vals[settingBatch], vals[settingTokens]
	if ss.accelerators == 0 {
		// In floating point: three sizes up to 2^24 each can wrap an int.
		if par := float64(max(vals[settingTP], 1)) * float64(max(vals[settingPP], 1)) * float64(max(vals[settingDPLocal], 1)); par > 1 {
			ss.accelerators = int(min(par, math.MaxInt32))
			ss.from[settingAccs] = "the parallel sizes of the server's arguments"
		}
	}
	if ss.accelerators > engine.MaxAcceleratorsPerReplica {
		ss.problems = append(ss.problems, fmt.Sprintf("%s ask for %d accelerators per replica, more than %d", ss.from[settingAccs], ss.accelerators, engine.MaxAcceleratorsPerReplica))
		ss.accelerators = 0
		delete(ss.from, settingAccs)
	}
	return ss
}

// readArgs reads one container's argument words; the last of a flag wins,
// as in argparse.
func (ss *serverSettings) readArgs(container string, args []string, vals map[string]int) {
	for i := 0; i < len(args); i++ {
		flag, value, inline := strings.Cut(args[i], "=")
		if !strings.HasPrefix(flag, "-") {
			continue
		}
		setting, ok := serverFlags[strings.ReplaceAll(flag, "_", "-")]
		if !ok {
			continue
		}
		if !inline {
			if i+1 >= len(args) {
				ss.problems = append(ss.problems, fmt.Sprintf("container %s: %s has no value", container, flag))
				continue
			}
			i++
			value = args[i]
		}
		n, err := strconv.Atoi(value)
		if err != nil || n < 1 || n > maxSetting {
			ss.problems = append(ss.problems, fmt.Sprintf("container %s: %s %q is not a whole number from 1 to %d", container, flag, value, maxSetting))
			continue
		}
		vals[setting] = n
		ss.from[setting] = fmt.Sprintf("container %s, %s", container, flag)
	}
}

// words are a command line's words; an element after a shell's -c is a
// script, split at white space (enough for `exec vllm serve … --flag n`).
func words(cmd []string) []string {
	var out []string
	for i, w := range cmd {
		if i > 0 && cmd[i-1] == "-c" {
			out = append(out, strings.Fields(w)...)
			continue
		}
		out = append(out, w)
	}
	return out
}

// acceleratorsOf sums a container's accelerator resources: its limits,
// else its requests (extended resources must be equal in both).
func acceleratorsOf(c corev1.Container) int {
	n := 0
	for _, r := range acceleratorResources {
		q, ok := c.Resources.Limits[r]
		if !ok {
			q, ok = c.Resources.Requests[r]
		}
		if v, exact := q.AsInt64(); ok && exact && v > 0 && v <= maxSetting {
			n += int(v)
		}
	}
	return n
}

func joinFrom(a, b string) string {
	if a == "" {
		return b
	}
	return a + " and " + b
}

// resolvedSettings are a variant's server settings: the
// VariantAutoscaling's where it gives them, else the workload's; and the
// ServerSettingsConsistent condition that says so.
type resolvedSettings struct {
	batch, tokens, accelerators int
	ok                          bool
	reason, message             string
}

// resolveSettings lays the VariantAutoscaling's explicit values (its
// profile's maxBatchSize and accCount, or acceleratorCount) over what the
// workload says. An explicit value wins; one that differs from the
// workload's is a disagreement, reported but not an error (the server's
// arguments may be templated by a chart the user cannot change).
func resolveSettings(prof *wvav1.AcceleratorProfile, ss serverSettings) resolvedSettings {
	var explicitBatch, explicitAccs int
	if prof != nil {
		explicitBatch, explicitAccs = int(prof.MaxBatchSize), int(prof.AccCount)
	}
	out := resolvedSettings{batch: ss.batch, tokens: ss.tokens, accelerators: ss.accelerators, ok: true}
	var disagree, used []string
	for _, s := range []struct {
		name               string
		explicit, workload int
		dst                *int
	}{{settingBatch, explicitBatch, ss.batch, &out.batch}, {settingAccs, explicitAccs, ss.accelerators, &out.accelerators}} {
		switch {
		case s.explicit > 0 && s.workload > 0 && s.explicit != s.workload:
			disagree = append(disagree, fmt.Sprintf("%s is %d in the VariantAutoscaling but %d in the workload (%s); using %d",
				s.name, s.explicit, s.workload, ss.from[s.name], s.explicit))
			*s.dst = s.explicit
		case s.explicit > 0:
			*s.dst = s.explicit
		case s.workload > 0:
			used = append(used, fmt.Sprintf("%s %d from %s", s.name, s.workload, ss.from[s.name]))
		}
	}
	if ss.tokens > 0 {
		used = append(used, fmt.Sprintf("%s %d from %s", settingTokens, ss.tokens, ss.from[settingTokens]))
	}
	sort.Strings(used)
	switch {
	case len(disagree) > 0 || len(ss.problems) > 0:
		out.ok, out.reason = false, wvav1.ReasonSettingsDisagree
		out.message = strings.Join(append(disagree, ss.problems...), "; ")
	case len(used) > 0:
		out.reason, out.message = wvav1.ReasonSettingsFromWorkload, "read from the workload: "+strings.Join(used, ", ")
	case explicitBatch > 0 || explicitAccs > 0:
		out.reason, out.message = wvav1.ReasonSettingsMatch, "the VariantAutoscaling's settings; the workload gives none that differ"
	default:
		out.reason = wvav1.ReasonSettingsDefault
		out.message = "neither the VariantAutoscaling nor the workload gives the batch size or accelerators per replica: using the defaults (a batch of 256, 1 accelerator)"
	}
	return out
}
