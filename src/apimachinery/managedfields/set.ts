/**
 * fieldpath.Set: a tree of path elements where a node can be a member (the path itself is in the set), have
 * children, or both. Set algebra follows fieldpath/set.go, including the difference between Difference (a
 * member in the other set does not remove the children here) and RecursiveDifference (it does).
 */
import { comparePE, serializePE, type Path, type PathElement } from './path.js';

interface Child {
  pe: PathElement;
  set: FieldSet;
}

export class FieldSet {
  private readonly members = new Map<string, PathElement>();
  private readonly children = new Map<string, Child>();

  static of(...paths: Path[]): FieldSet {
    const s = new FieldSet();
    for (const p of paths) s.insert(p);
    return s;
  }

  /** Adds a path (its last element becomes a member of the node its other elements lead to). */
  insert(path: Path): void {
    if (path.length === 0) return;
    const node = path.slice(0, -1).reduce((at: FieldSet, pe) => at.descend(pe), this);
    node.insertMember(path[path.length - 1]);
  }

  insertMember(pe: PathElement): void {
    this.members.set(serializePE(pe), pe);
  }

  /** The child set at pe, created if missing (fieldpath's Children.Descend). */
  descend(pe: PathElement): FieldSet {
    const id = serializePE(pe);
    let c = this.children.get(id);
    if (!c) {
      c = { pe, set: new FieldSet() };
      this.children.set(id, c);
    }
    return c.set;
  }

  hasMember(pe: PathElement): boolean {
    return this.members.has(serializePE(pe));
  }

  has(path: Path): boolean {
    if (path.length === 0) return false;
    const node = path.slice(0, -1).reduce((at: FieldSet | undefined, pe) => at?.child(pe), this);
    return node ? node.hasMember(path[path.length - 1]) : false;
  }

  child(pe: PathElement): FieldSet | undefined {
    return this.children.get(serializePE(pe))?.set;
  }

  /** The paths below pe, relative to it (empty when there are none). */
  withPrefix(pe: PathElement): FieldSet {
    return this.child(pe) ?? new FieldSet();
  }

  empty(): boolean {
    if (this.members.size > 0) return false;
    for (const c of this.children.values()) if (!c.set.empty()) return false;
    return true;
  }

  /** Members, in no particular order. */
  memberList(): PathElement[] {
    return [...this.members.values()];
  }

  /** Non-empty children, in no particular order. */
  childList(): Child[] {
    return [...this.children.values()].filter((c) => !c.set.empty());
  }

  /** Members, sorted. */
  sortedMembers(): PathElement[] {
    return [...this.members.values()].sort(comparePE);
  }

  /** Non-empty children, sorted. */
  sortedChildren(): Child[] {
    return [...this.children.values()].filter((c) => !c.set.empty()).sort((a, b) => comparePE(a.pe, b.pe));
  }

  /** Every path: a node's members first, then its children's paths, each in order (Set.Iterate). */
  paths(prefix: Path = []): Path[] {
    const out: Path[] = this.sortedMembers().map((pe) => [...prefix, pe]);
    for (const c of this.sortedChildren()) out.push(...c.set.paths([...prefix, c.pe]));
    return out;
  }

  size(): number {
    let n = this.members.size;
    for (const c of this.children.values()) n += c.set.size();
    return n;
  }

  copy(): FieldSet {
    return this.union(new FieldSet());
  }

  union(other: FieldSet): FieldSet {
    const out = new FieldSet();
    for (const [id, pe] of this.members) out.members.set(id, pe);
    for (const [id, pe] of other.members) out.members.set(id, pe);
    for (const [id, c] of this.children) {
      const o = other.children.get(id);
      out.putChild(id, c.pe, o ? c.set.union(o.set) : c.set.copyShallow());
    }
    for (const [id, c] of other.children) {
      if (!this.children.has(id)) out.putChild(id, c.pe, c.set.copyShallow());
    }
    return out;
  }

  intersection(other: FieldSet): FieldSet {
    const out = new FieldSet();
    for (const [id, pe] of this.members) if (other.members.has(id)) out.members.set(id, pe);
    for (const [id, c] of this.children) {
      const o = other.children.get(id);
      if (o) out.putChild(id, c.pe, c.set.intersection(o.set));
    }
    return out;
  }

  /** Paths here and not in other; a member of other does not remove this set's children below it. */
  difference(other: FieldSet): FieldSet {
    const out = new FieldSet();
    for (const [id, pe] of this.members) if (!other.members.has(id)) out.members.set(id, pe);
    for (const [id, c] of this.children) {
      const o = other.children.get(id);
      out.putChild(id, c.pe, o ? c.set.difference(o.set) : c.set.copyShallow());
    }
    return out;
  }

  /** Like difference, but a member of other also removes everything below it. */
  recursiveDifference(other: FieldSet): FieldSet {
    const out = new FieldSet();
    for (const [id, pe] of this.members) if (!other.members.has(id)) out.members.set(id, pe);
    for (const [id, c] of this.children) {
      if (other.members.has(id)) continue;
      const o = other.children.get(id);
      out.putChild(id, c.pe, o ? c.set.recursiveDifference(o.set) : c.set.copyShallow());
    }
    return out;
  }

  equals(other: FieldSet): boolean {
    return this.difference(other).empty() && other.difference(this).empty();
  }

  private putChild(id: string, pe: PathElement, set: FieldSet): void {
    if (!set.empty()) this.children.set(id, { pe, set });
  }

  private copyShallow(): FieldSet {
    const out = new FieldSet();
    for (const [id, pe] of this.members) out.members.set(id, pe);
    for (const [id, c] of this.children) out.putChild(id, c.pe, c.set.copyShallow());
    return out;
  }

  /** Adds every path of other to this set, in place. */
  absorb(other: FieldSet): void {
    for (const [id, pe] of other.members) this.members.set(id, pe);
    for (const c of other.children.values()) this.descend(c.pe).absorb(c.set);
  }

  /** A set holding inner's paths below prefix. */
  static underPrefix(prefix: Path, inner: FieldSet): FieldSet {
    const out = new FieldSet();
    let node = out;
    for (const pe of prefix) node = node.descend(pe);
    node.absorb(inner);
    return out;
  }
}
