//! Building a level-of-detail tree over a model, bottom-up over a spatial tree.
//!
//! The Gaussians are split top-down at the median of their centres along the longest side of
//! their bounding box, three times per level, so each node has up to 8 children; a group of 8 or
//! fewer becomes one node whose children are the Gaussians themselves (the leaves, unchanged).
//! Each interior node is then the merged Gaussian of its children ([`super::merge`]), computed
//! from the leaves up. Nodes are numbered breadth-first: a node's children are consecutive (its
//! *family*), every node's parent has a smaller number, and the families of one level follow
//! their parents' order, so a prefix of the numbering is a coarse model of the whole scene.
//!
//! Each node also has a bounding sphere that holds its own 3σ ellipsoid and every descendant's
//! sphere, so a child's sphere lies inside its parent's: the rule a cut relies on to be valid
//! (see [`super::cut_reference`]).

use super::check::{check_gaussians, check_spheres};
use super::merge::{Moments, merge_moments, moments_of, push_moments};
use crate::error::{Error, Result};
use crate::io::ply::PlyModel;
use crate::splat::reference::CpuGaussians;

/// The parent of the root.
pub const NO_NODE: u32 = u32::MAX;
/// Most children of a node.
pub const MAX_CHILDREN: usize = 8;
/// Standard deviations a node's bounding sphere reaches along its largest axis.
pub const SPHERE_SIGMAS: f64 = 3.0;
/// Groups at least this large are built on several threads.
const PARALLEL_GROUP: usize = 4096;

/// The links and bounding spheres of a level-of-detail tree, breadth-first: what a cut reads.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Skeleton {
    /// Each node's parent ([`NO_NODE`] for the root, node 0).
    pub parent: Vec<u32>,
    /// Each node's first child (0 for a leaf).
    pub first_child: Vec<u32>,
    /// Each node's number of children (0 for a leaf).
    pub child_count: Vec<u32>,
    /// Each node's bounding sphere: centre x, y, z and radius.
    pub spheres: Vec<[f32; 4]>,
}

impl Skeleton {
    /// Nodes in the tree.
    pub fn len(&self) -> usize {
        self.parent.len()
    }

    /// Whether the tree has no node.
    pub fn is_empty(&self) -> bool {
        self.parent.is_empty()
    }

    /// Leaves (the model's Gaussians).
    pub fn leaves(&self) -> usize {
        self.child_count.iter().filter(|&&c| c == 0).count()
    }

    /// Depth of the deepest leaf (the root is at depth 0).
    pub fn depth(&self) -> usize {
        let mut depth = vec![0usize; self.len()];
        for n in 1..self.len() {
            depth[n] = depth[self.parent[n] as usize] + 1;
        }
        depth.into_iter().max().unwrap_or(0)
    }
}

/// A level-of-detail tree: every node's Gaussian, and the skeleton, breadth-first.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LodTree {
    /// Every node's Gaussian (leaves are the model's own), breadth-first.
    pub gaussians: CpuGaussians,
    /// SH degree of the model.
    pub sh_degree: u32,
    /// Links and bounding spheres.
    pub skeleton: Skeleton,
}

/// One node under construction.
struct Built {
    /// The leaf's Gaussian in the model, or `None` for an interior node.
    leaf: Option<u32>,
    children: Vec<Built>,
    moments: Moments,
    sphere: [f64; 4],
}

fn distance(a: [f64; 3], b: [f64; 3]) -> f64 {
    ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2) + (a[2] - b[2]).powi(2)).sqrt()
}

/// A sphere around `m`'s 3σ ellipsoid.
fn own_sphere(m: &Moments) -> [f64; 4] {
    let (scales, _) = super::merge::scales_and_rotation(&m.covariance);
    let radius = SPHERE_SIGMAS * scales.into_iter().fold(0.0, f64::max);
    [m.mean[0], m.mean[1], m.mean[2], radius]
}

/// `own` grown to hold every sphere of `children`, with a margin so that f32 rounding of the
/// stored centres never lets a child's sphere poke out of its parent's.
fn enclosing(own: [f64; 4], children: impl Iterator<Item = [f64; 4]>) -> [f64; 4] {
    let centre = [own[0], own[1], own[2]];
    let mut radius = own[3];
    for [x, y, z, r] in children {
        radius = radius.max(distance(centre, [x, y, z]) + r);
    }
    [own[0], own[1], own[2], radius * (1.0 + 1e-5)]
}

/// Splits `indices` into up to 8 groups at the median of the centres along the longest axis.
fn split_eight<'a>(g: &CpuGaussians, indices: &'a mut [u32]) -> Vec<&'a mut [u32]> {
    let mut parts = vec![indices];
    for _ in 0..3 {
        let mut next = Vec::with_capacity(parts.len() * 2);
        for part in parts {
            if part.len() < 2 {
                next.push(part);
                continue;
            }
            let mut lo = [f32::INFINITY; 3];
            let mut hi = [f32::NEG_INFINITY; 3];
            for &i in part.iter() {
                for k in 0..3 {
                    lo[k] = lo[k].min(g.means[i as usize][k]);
                    hi[k] = hi[k].max(g.means[i as usize][k]);
                }
            }
            let axis = (0..3)
                .max_by(|&a, &b| (hi[a] - lo[a]).total_cmp(&(hi[b] - lo[b])))
                .unwrap_or(0);
            let mid = part.len() / 2;
            part.select_nth_unstable_by(mid, |&a, &b| {
                g.means[a as usize][axis].total_cmp(&g.means[b as usize][axis])
            });
            let (left, right) = part.split_at_mut(mid);
            next.push(left);
            next.push(right);
        }
        parts = next;
    }
    parts
}

fn build_group(g: &CpuGaussians, indices: &mut [u32]) -> Built {
    if indices.len() == 1 {
        let moments = moments_of(g, indices[0] as usize);
        let sphere = own_sphere(&moments);
        return Built {
            leaf: Some(indices[0]),
            children: Vec::new(),
            moments,
            sphere,
        };
    }
    let parts: Vec<&mut [u32]> = if indices.len() <= MAX_CHILDREN {
        indices.chunks_mut(1).collect()
    } else {
        split_eight(g, indices)
    };
    let big = parts.iter().map(|p| p.len()).sum::<usize>() >= PARALLEL_GROUP;
    let children: Vec<Built> = if big {
        use rayon::prelude::*;
        parts
            .into_par_iter()
            .map(|part| build_group(g, part))
            .collect()
    } else {
        parts.into_iter().map(|part| build_group(g, part)).collect()
    };
    let member_moments: Vec<Moments> = children.iter().map(|c| c.moments.clone()).collect();
    let moments = merge_moments(&member_moments);
    let sphere = enclosing(own_sphere(&moments), children.iter().map(|c| c.sphere));
    Built {
        leaf: None,
        children,
        moments,
        sphere,
    }
}

/// Appends row `i` of `g` to `out`.
pub(super) fn copy_leaf(out: &mut CpuGaussians, g: &CpuGaussians, i: usize) {
    out.means.push(g.means[i]);
    out.log_scales.push(g.log_scales[i]);
    out.quats.push(g.quats[i]);
    out.opacity_logits.push(g.opacity_logits[i]);
    out.sh.push(g.sh[i]);
}

/// Builds the level-of-detail tree of `model`. Fails on an empty model, one past 2³¹ nodes, a
/// Gaussian [`check_gaussians`] refuses, or a model spread wider than f32 holds.
pub fn build_tree(model: &PlyModel) -> Result<LodTree> {
    let g = &model.gaussians;
    let n = g.means.len();
    if n == 0 {
        return Err(Error::InvalidArgument {
            op: "lod",
            detail: "the model has no Gaussians: there is nothing to build a tree over".into(),
        });
    }
    check_gaussians(model)?;
    if n > (1usize << 30) {
        return Err(Error::Overflow {
            what: "level-of-detail tree nodes".into(),
            needed: n as u64 * 8 / 7,
            max: 1 << 31,
            hint: "split the model (a plan's blocks) and build one tree per block".into(),
        });
    }
    let mut indices: Vec<u32> = (0..n as u32).collect();
    let root = build_group(g, &mut indices);
    // Breadth-first numbering.
    let mut order: Vec<&Built> = vec![&root];
    let mut tree = LodTree {
        sh_degree: model.sh_degree,
        ..Default::default()
    };
    tree.skeleton.parent.push(NO_NODE);
    let mut at = 0;
    while at < order.len() {
        let node = order[at];
        tree.skeleton.first_child.push(if node.children.is_empty() {
            0
        } else {
            order.len() as u32
        });
        tree.skeleton.child_count.push(node.children.len() as u32);
        for child in &node.children {
            order.push(child);
            tree.skeleton.parent.push(at as u32);
        }
        match node.leaf {
            Some(i) => copy_leaf(&mut tree.gaussians, g, i as usize),
            None => push_moments(&mut tree.gaussians, &node.moments),
        }
        tree.skeleton.spheres.push(node.sphere.map(|v| v as f32));
        at += 1;
    }
    check_spheres(&tree.skeleton)?;
    Ok(tree)
}

/// Rebuilds every interior node's bounding sphere from the leaves up: its own 3σ sphere grown
/// to hold its children's, as [`build_tree`] makes them.
pub fn rebuild_spheres(tree: &mut LodTree) {
    let s = &mut tree.skeleton;
    for n in (0..s.len()).rev() {
        let count = s.child_count[n] as usize;
        if count == 0 {
            continue;
        }
        let [x, y, z] = tree.gaussians.means[n].map(f64::from);
        let largest = tree.gaussians.log_scales[n]
            .into_iter()
            .fold(f32::MIN, f32::max);
        let own = [x, y, z, SPHERE_SIGMAS * f64::from(largest).exp()];
        let first = s.first_child[n] as usize;
        let children = s.spheres[first..first + count]
            .iter()
            .map(|c| c.map(f64::from));
        s.spheres[n] = enclosing(own, children).map(|v| v as f32);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    pub(crate) fn random_model(n: usize, seed: u64) -> PlyModel {
        let mut rng = SplitMix64::new(seed);
        let mut g = CpuGaussians::default();
        for _ in 0..n {
            g.means.push([0; 3].map(|_| rng.range(-5.0, 5.0)));
            g.log_scales.push([0; 3].map(|_| rng.range(-4.0, -2.0)));
            g.quats.push([0; 4].map(|_| rng.range(-0.5, 0.5)));
            g.opacity_logits.push(rng.range(-2.0, 2.0));
            let mut sh = [[0.0; 3]; 16];
            sh[0] = [0; 3].map(|_| rng.range(-0.5, 0.5));
            g.sh.push(sh);
        }
        PlyModel {
            gaussians: g,
            sh_degree: 0,
        }
    }

    #[test]
    fn every_gaussian_is_one_leaf_and_spheres_nest() {
        for n in [1usize, 2, 8, 9, 1000] {
            let model = random_model(n, n as u64);
            let built = build_tree(&model).unwrap();
            let tree = &built.skeleton;
            assert_eq!(tree.leaves(), n, "{n} Gaussians");
            // Leaves are the model's Gaussians, each exactly once.
            let mut leaf_means: Vec<[u32; 3]> = (0..tree.len())
                .filter(|&i| tree.child_count[i] == 0)
                .map(|i| built.gaussians.means[i].map(f32::to_bits))
                .collect();
            let mut model_means: Vec<[u32; 3]> = model
                .gaussians
                .means
                .iter()
                .map(|m| m.map(f32::to_bits))
                .collect();
            leaf_means.sort();
            model_means.sort();
            assert_eq!(leaf_means, model_means);
            for c in 1..tree.len() {
                let p = tree.parent[c] as usize;
                assert!(p < c, "breadth-first: parent {p} of {c}");
                let (first, count) = (tree.first_child[p], tree.child_count[p]);
                assert!((first..first + count).contains(&(c as u32)));
                let [px, py, pz, pr] = tree.spheres[p];
                let [cx, cy, cz, cr] = tree.spheres[c];
                let d = ((px - cx).powi(2) + (py - cy).powi(2) + (pz - cz).powi(2)).sqrt();
                assert!(d + cr <= pr * (1.0 + 1e-6), "sphere of {c} leaves {p}'s");
            }
            assert!(tree.child_count.iter().all(|&c| c as usize <= MAX_CHILDREN));
        }
    }

    #[test]
    fn an_empty_model_is_refused() {
        let err = build_tree(&random_model(0, 1)).unwrap_err().to_string();
        assert!(err.contains("no Gaussians"), "{err}");
    }

    #[test]
    fn spheres_rebuilt_after_nodes_move_still_nest_and_hold_their_nodes() {
        let mut tree = build_tree(&random_model(2000, 7)).unwrap();
        let mut rng = SplitMix64::new(3);
        for n in 0..tree.skeleton.len() {
            if tree.skeleton.child_count[n] > 0 {
                for k in 0..3 {
                    tree.gaussians.means[n][k] += rng.range(-2.0, 2.0);
                    tree.gaussians.log_scales[n][k] += rng.range(0.0, 1.5);
                }
            }
        }
        let leaf_spheres: Vec<[f32; 4]> = (0..tree.skeleton.len())
            .filter(|&n| tree.skeleton.child_count[n] == 0)
            .map(|n| tree.skeleton.spheres[n])
            .collect();
        rebuild_spheres(&mut tree);
        let s = &tree.skeleton;
        for c in 1..s.len() {
            let p = s.parent[c] as usize;
            let [px, py, pz, pr] = s.spheres[p];
            let [cx, cy, cz, cr] = s.spheres[c];
            let d = ((px - cx).powi(2) + (py - cy).powi(2) + (pz - cz).powi(2)).sqrt();
            assert!(d + cr <= pr * (1.0 + 1e-6), "sphere of {c} leaves {p}'s");
        }
        for n in 0..s.len() {
            let largest = tree.gaussians.log_scales[n]
                .into_iter()
                .fold(f32::MIN, f32::max);
            let own = SPHERE_SIGMAS as f32 * largest.exp();
            assert!(
                s.spheres[n][3] >= own * (1.0 - 1e-5),
                "node {n} outgrew its sphere"
            );
        }
        let after: Vec<[f32; 4]> = (0..s.len())
            .filter(|&n| s.child_count[n] == 0)
            .map(|n| s.spheres[n])
            .collect();
        assert_eq!(after, leaf_spheres, "leaves keep their spheres");
    }
}
