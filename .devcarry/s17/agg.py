"""Session 17: self and inclusive shares of py-spy raw (collapsed) stacks, the calls' samples only."""
import sys, collections
self_c, incl, total = collections.Counter(), collections.Counter(), 0
for line in open(sys.argv[1]):
    stack, _, n = line.rstrip().rpartition(' ')
    if 'prof_args.py:2' not in stack:  # the timed loop's lines (20-23)
        continue
    n = int(n); frames = stack.split(';'); total += n
    nm = lambda f: f.split(' (')[0][:140]
    self_c[nm(frames[-1])] += n
    for f in set(map(nm, frames)):
        incl[f] += n
print('samples', total)
print('--- self'); [print(f'{v*100/total:5.1f}% {k}') for k, v in self_c.most_common(45)]
print('--- inclusive'); [print(f'{v*100/total:5.1f}% {k}') for k, v in incl.most_common(60)]
