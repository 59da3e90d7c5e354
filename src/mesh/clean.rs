//! Cleaning a mesh: its connected components (triangles that share a vertex are connected),
//! dropping the small ones, and the open edges that say whether it is watertight.

use std::collections::HashMap;

use super::Mesh;

impl Mesh {
    /// For each triangle, the index of its connected component (components numbered from 0 in
    /// order of their first triangle); and each component's triangle count.
    pub fn components(&self) -> (Vec<u32>, Vec<usize>) {
        let mut parent: Vec<u32> = (0..self.positions.len() as u32).collect();
        fn root(parent: &mut [u32], mut v: u32) -> u32 {
            while parent[v as usize] != v {
                let up = parent[parent[v as usize] as usize];
                parent[v as usize] = up;
                v = up;
            }
            v
        }
        for t in &self.triangles {
            let r0 = root(&mut parent, t[0]);
            for &v in &t[1..] {
                let r = root(&mut parent, v);
                if r != r0 {
                    parent[r as usize] = r0;
                }
            }
        }
        let mut numbers: HashMap<u32, u32> = HashMap::new();
        let mut counts = Vec::new();
        let labels = self
            .triangles
            .iter()
            .map(|t| {
                let r = root(&mut parent, t[0]);
                let next = numbers.len() as u32;
                let label = *numbers.entry(r).or_insert(next);
                if label as usize == counts.len() {
                    counts.push(0);
                }
                counts[label as usize] += 1;
                label
            })
            .collect();
        (labels, counts)
    }

    /// Drops every connected component with fewer than `fraction` times the largest
    /// component's triangles, and the vertices no triangle uses any more. Returns how many
    /// triangles were dropped.
    pub fn keep_largest_components(&mut self, fraction: f32) -> usize {
        let (labels, counts) = self.components();
        let Some(&largest) = counts.iter().max() else {
            return 0;
        };
        let keep_from = (f64::from(fraction) * largest as f64).ceil() as usize;
        let before = self.triangles.len();
        let triangles: Vec<[u32; 3]> = self
            .triangles
            .iter()
            .zip(&labels)
            .filter(|(_, l)| counts[**l as usize] >= keep_from)
            .map(|(t, _)| *t)
            .collect();
        if triangles.len() < before {
            self.triangles = triangles;
            self.drop_unused_vertices();
        }
        before - self.triangles.len()
    }

    /// Removes the vertices no triangle uses, renumbering the triangles.
    pub fn drop_unused_vertices(&mut self) {
        let mut new_index = vec![u32::MAX; self.positions.len()];
        let (mut positions, mut colours) = (Vec::new(), Vec::new());
        for t in &mut self.triangles {
            for v in t.iter_mut() {
                let slot = &mut new_index[*v as usize];
                if *slot == u32::MAX {
                    *slot = positions.len() as u32;
                    positions.push(self.positions[*v as usize]);
                    colours.push(self.colours[*v as usize]);
                }
                *v = *slot;
            }
        }
        self.positions = positions;
        self.colours = colours;
    }

    /// The number of edges not shared by exactly two triangles (0 for a closed, manifold
    /// surface), and the number of edges shared by two triangles that run along them in the same
    /// direction (0 when the triangles are consistently wound).
    pub fn open_edges(&self) -> (usize, usize) {
        let mut edges: HashMap<(u32, u32), (u32, u32)> = HashMap::new();
        for t in &self.triangles {
            for k in 0..3 {
                let (a, b) = (t[k], t[(k + 1) % 3]);
                let entry = edges.entry((a.min(b), a.max(b))).or_default();
                match a < b {
                    true => entry.0 += 1,
                    false => entry.1 += 1,
                }
            }
        }
        let open = edges.values().filter(|(f, b)| f + b != 2).count();
        let misoriented = edges
            .values()
            .filter(|(f, b)| f + b == 2 && *f != 1)
            .count();
        (open, misoriented)
    }
}
